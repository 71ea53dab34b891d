package charge

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Price prices a job's usage with Gold's formula,
//
//	charge = (((VBR + NBR) × ConsumptionRate × WallDuration) + VBU + NBU) × VBM × NBM + VBF + NBF
//
// after the policy has chosen the Processors quantity, the WallDuration and
// the ConsumptionRate (see Policy), and with the time-scaled part
// multiplied, stretch by stretch, by the time windows the WallDuration
// crosses. When a SUCCESSFUL policy does not charge the job, the amount is
// zero and the explanation says why. Everything is checked first, whatever
// the policy then decides: a bad table, policy, shape or usage is an error,
// and so is a job property value the table does not price (see
// ErrUnknownInstance).
//
// Price prices what it is given: for an incremental charge, pass the
// increment (its wallclock, CPU seconds and start) with the state Running.
func Price(table RateTable, policy Policy, shape Shape, u Usage) (Amount, error) {
	c, err := table.compile()
	if err != nil {
		return Amount{}, err
	}
	if policy.String() == "" {
		return Amount{}, fmt.Errorf("%w: %d", ErrUnknownPolicy, policy)
	}
	if err := shape.validate(); err != nil {
		return Amount{}, err
	}
	if err := u.validate(); err != nil {
		return Amount{}, err
	}
	q, err := policy.quantities(shape, u)
	if err != nil {
		return Amount{}, err
	}
	if err := c.checkValues(u.Resources); err != nil {
		return Amount{}, err
	}
	segments := []segment{{seconds: q.seconds, multiplier: decimal.NewFromInt(1)}}
	if !c.windows.empty() {
		if u.Start.IsZero() {
			return Amount{}, ErrNoStartTime
		}
		segments = c.windows.split(u.Start.Truncate(time.Second), q.seconds)
	}
	explanation := Explanation{Subject: "charge", Policy: policy, State: u.State, Precision: c.precision}
	if policyRules[policy].successfulOnly && !u.successful() {
		limit := "no known limit"
		if u.WallclockLimitSeconds > 0 {
			limit = fmt.Sprintf("a %d s limit", u.WallclockLimitSeconds)
		}
		explanation.NoCharge = fmt.Sprintf("%s charges only jobs that run to their end or their wallclock limit; this one ended %s after %d s of %s and is released with no charge",
			policy, u.State, u.WallclockSeconds, limit)
		return Amount{Credits: decimal.New(0, -c.precision), Explanation: explanation}, nil
	}
	explanation.Basis = q.basis
	return c.apply(explanation, q, u.Resources, segments), nil
}

// checkValues refuses a job whose value of a priced property (a QOS, a
// partition, a node type, a license) no name-based rate lists, when the
// table has no "*" rate for that property: pricing it as if unlisted
// values cost nothing extra would hide a typo or a new QOS nobody priced.
// A property the job leaves empty matches nothing and is not an error.
func (c compiledTable) checkValues(r Resources) error {
	for _, property := range propertyNames {
		if !c.priced[property] || c.known[propertyValue{property, Wildcard}] {
			continue
		}
		for _, v := range r.values(property) {
			if !c.known[propertyValue{property, strings.ToLower(v.value)}] {
				return fmt.Errorf("%w: %s=%s (add a %s=%s rate to accept values the table does not list)",
					ErrUnknownInstance, property, v.value, property, Wildcard)
			}
		}
	}
	return nil
}

// namedValue is a value of a job property and how many of it the job holds.
type namedValue struct {
	value string
	count int64
}

// values returns the job's values of a name-based property.
func (r Resources) values(property string) []namedValue {
	single := func(v string) []namedValue {
		if v == "" {
			return nil
		}
		return []namedValue{{v, 1}}
	}
	switch property {
	case "QualityOfService":
		return single(r.QOS)
	case "Partition":
		return single(r.Partition)
	case "NodeType":
		return single(r.NodeType)
	}
	var licenses []namedValue
	for _, name := range slices.Sorted(maps.Keys(r.Licenses)) {
		if r.Licenses[name] > 0 {
			licenses = append(licenses, namedValue{name, r.Licenses[name]})
		}
	}
	return licenses
}

// match is a rate's quantity for one job: its value-based quantity, or one
// of the job's values of its name-based property.
type match struct {
	what     string
	quantity *big.Rat
}

// matches returns what a rate applies to. A name-based rate applies to the
// job values equal to its instance (case-insensitively), and a "*" rate to
// those no rate of its type and name lists. A multiplier counts once
// whatever the count (two matlab licenses do not square a multiplier).
func (c compiledTable) matches(cr compiledRate, q chargedQuantities, r Resources) []match {
	if !rateTypes[cr.key.typ].nameBased {
		return []match{{cr.key.name, q.values[cr.key.name]}}
	}
	var out []match
	for _, v := range r.values(cr.key.name) {
		what := cr.key.name + "=" + v.value
		switch {
		case cr.key.instance == strings.ToLower(v.value):
		case cr.key.instance == Wildcard && !c.listed[rateKey{cr.key.typ, cr.key.name, strings.ToLower(v.value)}]:
			what += " (" + Wildcard + ")"
		default:
			continue
		}
		count := v.count
		if cr.term == multiplierTerm {
			count = 1
		}
		out = append(out, match{what, ratInt(count)})
	}
	return out
}

// apply fills in the formula. All arithmetic is exact; the only rounding is
// the final half-even rounding to the currency precision.
func (c compiledTable) apply(e Explanation, q chargedQuantities, r Resources, segments []segment) Amount {
	one := decimal.NewFromInt(1)
	var items [feeTerm + 1][]LineItem
	sums := [feeTerm + 1]*big.Rat{new(big.Rat), new(big.Rat), big.NewRat(1, 1), new(big.Rat)}
	for _, cr := range c.rates {
		rate := cr.rate.Rat()
		for _, m := range c.matches(cr, q, r) {
			// A zero quantity adds nothing; it is left out unless it is a
			// multiplier, where it zeroes the charge and must be seen.
			if m.quantity.Sign() == 0 && cr.term != multiplierTerm {
				continue
			}
			item := LineItem{Type: cr.key.typ, What: m.what, Quantity: display(m.quantity), Rate: cr.rate, Multiplier: one}
			if cr.term == timeScaledTerm {
				for _, s := range segments {
					multiplier := product(s.multiplier.Rat(), q.consumption)
					subtotal := product(m.quantity, rate, ratInt(s.seconds), multiplier)
					item.Seconds, item.Multiplier, item.Subtotal = s.seconds, display(multiplier), display(subtotal)
					if !s.from.IsZero() {
						item.Window = s.String()
					}
					items[cr.term] = append(items[cr.term], item)
					sums[cr.term].Add(sums[cr.term], subtotal)
				}
				continue
			}
			subtotal := product(m.quantity, rate)
			item.Subtotal = display(subtotal)
			items[cr.term] = append(items[cr.term], item)
			if cr.term == multiplierTerm {
				sums[cr.term].Mul(sums[cr.term], subtotal)
			} else {
				sums[cr.term].Add(sums[cr.term], subtotal)
			}
		}
	}
	exact := product(new(big.Rat).Add(sums[timeScaledTerm], sums[usageTerm]), sums[multiplierTerm])
	exact.Add(exact, sums[feeTerm])
	e.Items = slices.Concat(items[:]...)
	e.TimeScaled, e.Usage = display(sums[timeScaledTerm]), display(sums[usageTerm])
	e.Multiplier, e.Fees = display(sums[multiplierTerm]), display(sums[feeTerm])
	e.Exact = display(exact)
	return Amount{Credits: roundHalfEven(exact, c.precision), Explanation: e}
}

// Quote prices a request as if the job ran for its whole wallclock limit
// with everything it asked for: its CPUs busy throughout (ConsumptionRate
// 1), and charged under SUCCESSFUL policies. That is the lien amount.
func Quote(table RateTable, policy Policy, shape Shape, req Request) (Amount, error) {
	if err := req.Resources.validate(); err != nil {
		return Amount{}, err
	}
	if err := checkBounds(bound{"wallclock limit seconds", req.WallclockLimitSeconds, MaxSeconds}); err != nil {
		return Amount{}, err
	}
	if req.WallclockLimitSeconds == 0 {
		return Amount{}, fmt.Errorf("%w: a quote prices the wallclock limit", ErrNoWallclockLimit)
	}
	u := Usage{
		Resources:             req.Resources,
		WallclockSeconds:      req.WallclockLimitSeconds,
		WallclockLimitSeconds: req.WallclockLimitSeconds,
		CPUSeconds:            req.Processors * req.WallclockLimitSeconds,
		Start:                 req.Start,
		State:                 Completed,
	}
	a, err := Price(table, policy, shape, u)
	if err != nil {
		return Amount{}, err
	}
	a.Explanation.Subject, a.Explanation.State = "quote", 0
	return a, nil
}
