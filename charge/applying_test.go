package charge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestApplyingMatchesScan looks up the rates that apply to random jobs
// under random tables, small ones (randomCases) and ones listing hundreds
// of values, and wants exactly what a scan of every rate of the table
// finds, in the same order.
func TestApplyingMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	type problem struct {
		table RateTable
		res   Resources
	}
	var problems []problem
	for _, c := range randomCases(3, 2000) {
		problems = append(problems, problem{c.table, c.usage.Resources})
	}
	for range 300 {
		problems = append(problems, problem{largeTable(r), randomResources(r)})
	}
	checked := 0
	for i, p := range problems {
		c, err := p.table.compile()
		if err != nil {
			continue
		}
		values := p.res.propertyValues()
		got, want := c.applying(nil, &values), c.scan(&values)
		if !slices.Equal(got, want) {
			t.Fatalf("problem %d (%+v, %+v): looked up %v, a scan finds %v", i, p.table.Rates, p.res, got, want)
		}
		if len(got) > len(c.valueBased) {
			checked++
		}
	}
	if checked < len(problems)/4 {
		t.Errorf("only %d of %d problems had a name-based rate apply", checked, len(problems))
	}
}

// scan is applying as a walk through every rate: a rate applies to the
// job values equal to its instance, and a "*" rate to those that no rate
// of its type and name lists.
func (c *compiledTable) scan(values *jobValues) []applied {
	var out []applied
	for i, cr := range c.rates {
		if !cr.nameBased {
			out = append(out, applied{i, -1})
			continue
		}
		for vi, v := range values.of(cr.quantity) {
			listed := slices.ContainsFunc(c.rates, func(other compiledRate) bool {
				return other.key.typ == cr.key.typ && other.key.name == cr.key.name && other.key.instance == v.lower
			})
			if cr.key.instance == v.lower || cr.key.instance == Wildcard && !listed {
				out = append(out, applied{i, vi})
			}
		}
	}
	return out
}

// largeTable lists up to a few hundred values of randomResources'
// properties, some of them in several rate types, with or without "*"
// rates, in any order.
func largeTable(r *rand.Rand) RateTable {
	t := RateTable{Precision: DefaultPrecision}
	listed := map[rateKey]bool{}
	add := func(rate ChargeRate) {
		if key, err := rate.key(); err == nil && !listed[key] {
			listed[key] = true
			t.Rates = append(t.Rates, rate)
		}
	}
	types := []RateType{VBR, NBR, VBU, NBU, VBM, NBM, VBF, NBF}
	for range r.IntN(400) {
		typ := types[r.IntN(len(types))]
		if !rateTypes[typ].nameBased {
			add(ChargeRate{Type: typ, Name: valueNames[r.IntN(len(valueNames))], Rate: randomRate(r)})
			continue
		}
		name := propertyNames[r.IntN(len(propertyNames))]
		instance := fmt.Sprint("v", r.IntN(300))
		switch values := randomValues[name]; r.IntN(4) {
		case 0:
			instance = Wildcard
		case 1:
			instance = randomSpelling(r, values[r.IntN(len(values))])
		}
		add(ChargeRate{Type: typ, Name: name, Instance: instance, Rate: randomRate(r)})
	}
	return t
}
