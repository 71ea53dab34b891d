package charge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// RateType is the kind of a charge rate: which term of Gold's formula it feeds.
// The names are Gold's: V/N for value-based or name-based, then R (resource,
// per second), U (usage, not scaled by time), M (multiplier), F (fee).
type RateType string

// The eight rate types of Gold's formula.
const (
	VBR RateType = "VBR" // rate × job's quantity, per second of WallDuration
	NBR RateType = "NBR" // rate × count of a matching property value, per second
	VBU RateType = "VBU" // rate × job's quantity, once
	NBU RateType = "NBU" // rate × count of a matching property value, once
	VBM RateType = "VBM" // multiplier rate × job's quantity
	NBM RateType = "NBM" // multiplier rate when a property value matches
	VBF RateType = "VBF" // fee rate × job's quantity, added after the multipliers
	NBF RateType = "NBF" // fee rate × count of a matching property value, added after the multipliers
)

// term is the part of the formula a rate type contributes to.
type term uint8

const (
	timeScaledTerm term = iota // (VBR + NBR) × ConsumptionRate × WallDuration
	usageTerm                  // + VBU + NBU
	multiplierTerm             // × VBM × NBM
	feeTerm                    // + VBF + NBF
)

var rateTypes = map[RateType]struct {
	term      term
	nameBased bool
}{
	VBR: {timeScaledTerm, false}, NBR: {timeScaledTerm, true},
	VBU: {usageTerm, false}, NBU: {usageTerm, true},
	VBM: {multiplierTerm, false}, NBM: {multiplierTerm, true},
	VBF: {feeTerm, false}, NBF: {feeTerm, true},
}

// Value-based rates multiply one of these job quantities (Gold's names):
// Processors (count; the charge policy may turn it into processor
// equivalents or whole nodes' cores), Nodes, GPUs, Memory (MB), Disk (MB),
// CPUTime (CPU seconds consumed). CPUTime is already time, so it cannot be a VBR.
var valueNames = [...]string{
	processors: "Processors", nodes: "Nodes", gpus: "GPUs", memory: "Memory", disk: "Disk", cpuTime: "CPUTime",
}

// The indexes of valueNames.
const (
	processors = iota
	nodes
	gpus
	memory
	disk
	cpuTime
)

// Name-based rates match a value of one of these job properties; the
// instance is the value ("premium", "gpu", "matlab") or "*" for any value
// the table does not list. License is the only one a job can hold several
// of, with counts.
var propertyNames = [...]string{qos: "QualityOfService", partition: "Partition", nodeType: "NodeType", license: "License"}

// The indexes of propertyNames.
const (
	qos = iota
	partition
	nodeType
	license
)

// Wildcard is the instance of a name-based rate that applies to every value
// the table does not list for that type and property.
const Wildcard = "*"

// ChargeRate is one row of the rate table, as in Gold: Type, Name, Instance
// (name-based types only), Rate.
type ChargeRate struct {
	Type        RateType        `json:"type"`
	Name        string          `json:"name"`
	Instance    string          `json:"instance,omitempty"`
	Rate        decimal.Decimal `json:"rate"`
	Description string          `json:"description,omitempty"`
}

// RateTable is everything needed to price a job: the bank's currency
// precision, the charge rates, and the time windows with their multipliers.
type RateTable struct {
	// Precision is the number of decimal places of the currency; amounts
	// are rounded half-even to it. The ledger sets it from the bank's own
	// setting. A decoded table without one gets DefaultPrecision.
	Precision int32 `json:"precision"`
	// Location is the IANA time zone (e.g. "Europe/Paris") in which the
	// windows' wall-clock times and days are read. Empty means UTC.
	Location   string       `json:"location,omitempty"`
	Rates      []ChargeRate `json:"rates"`
	TimeOfDay  []TimeWindow `json:"time_of_day,omitempty"`
	DaysOfWeek []DayWindow  `json:"days_of_week,omitempty"`
}

// Bounds on a rate table.
const (
	DefaultPrecision int32 = 2  // currency decimal places when none is given
	MaxPrecision     int32 = 18 // more places than that is a mistake
	MaxRatePlaces    int32 = 18 // decimal places a rate or multiplier may have
)

// maxRate (10^12) bounds every rate and multiplier: anything larger is a typo.
var maxRate = decimal.New(1, 12)

// DefaultRateTable is the table a bank starts with: 1 credit per
// processor-second, 2 decimal places, UTC, no windows.
func DefaultRateTable() RateTable {
	return RateTable{
		Precision: DefaultPrecision,
		Rates: []ChargeRate{{
			Type: VBR, Name: "Processors", Rate: decimal.NewFromInt(1),
			Description: "1 credit per processor-second",
		}},
	}
}

// Validate reports the first problem in the table: a precision out of range,
// an unknown time zone, a rate of unknown type or name, an instance on the
// wrong kind of rate, a duplicate rate, a negative or absurd rate, or a bad
// or overlapping window. Types, names and instances match case-insensitively.
func (t RateTable) Validate() error {
	_, err := t.compile()
	return err
}

// compiledTable is a validated table in the form pricing needs.
type compiledTable struct {
	precision int32
	// rates are in the order of the terms they feed and, within a term, of
	// the table, the order of the explanation's items.
	rates   []compiledRate
	windows windows
	// valueBased are the positions in rates of the value-based rates,
	// which apply to every job, in order.
	valueBased []int
	// named are, per name-based property (propertyNames' order), the
	// positions in rates of the rates that list each value (lower case,
	// "*" too), in order; nil if no rate matches the property. Pricing
	// looks a job's values up here, so that its cost does not grow with
	// the values the table lists.
	named [len(propertyNames)]map[string][]int
	// wildcards are, per name-based property, the positions in rates of
	// its "*" rates, in order.
	wildcards [len(propertyNames)][]int
}

type compiledRate struct {
	key       rateKey
	index     int // in the table's Rates, whose spelling of the rate the explanation shows
	term      term
	nameBased bool
	// quantity is the index of the rate's name in valueNames, or in
	// propertyNames for a name-based rate.
	quantity int
	rate     fraction
	// what is how the explanation names a name-based rate's item for a
	// job value spelled as the rate's instance ("QualityOfService=premium"),
	// made once; a value spelled otherwise is named as the job spells it.
	what string
}

func (t RateTable) compile() (compiledTable, error) {
	if t.Precision < 0 || t.Precision > MaxPrecision {
		return compiledTable{}, fmt.Errorf("%w: %d (want 0 to %d)", ErrBadPrecision, t.Precision, MaxPrecision)
	}
	c := compiledTable{
		precision: t.Precision,
		rates:     make([]compiledRate, 0, len(t.Rates)),
	}
	listed := make(map[rateKey]bool, len(t.Rates))
	for i, r := range t.Rates {
		key, err := r.key()
		if err != nil {
			return compiledTable{}, fmt.Errorf("%w (rates[%d])", err, i)
		}
		if listed[key] {
			return compiledTable{}, fmt.Errorf("%w: %s (rates[%d])", ErrDuplicateRate, key, i)
		}
		listed[key] = true
		info := rateTypes[key.typ]
		cr := compiledRate{key: key, index: i, term: info.term, nameBased: info.nameBased, rate: fractionOfDecimal(r.Rate)}
		if info.nameBased {
			cr.quantity = slices.Index(propertyNames[:], key.name)
			cr.what = key.name + "=" + key.instance
		} else {
			cr.quantity = slices.Index(valueNames[:], key.name)
		}
		c.rates = append(c.rates, cr)
	}
	slices.SortStableFunc(c.rates, func(a, b compiledRate) int { return int(a.term) - int(b.term) })
	for i, cr := range c.rates {
		switch {
		case !cr.nameBased:
			c.valueBased = append(c.valueBased, i)
		default:
			if c.named[cr.quantity] == nil {
				c.named[cr.quantity] = make(map[string][]int)
			}
			c.named[cr.quantity][cr.key.instance] = append(c.named[cr.quantity][cr.key.instance], i)
			if cr.key.instance == Wildcard {
				c.wildcards[cr.quantity] = append(c.wildcards[cr.quantity], i)
			}
		}
	}
	w, err := t.compileWindows()
	if err != nil {
		return compiledTable{}, err
	}
	c.windows = w
	return c, nil
}

// rateKey identifies a rate: at most one per type, name and instance.
type rateKey struct {
	typ      RateType
	name     string // canonical
	instance string // lower case; empty for value-based rates
}

func (k rateKey) String() string {
	if k.instance == "" {
		return fmt.Sprintf("%s %s", k.typ, k.name)
	}
	return fmt.Sprintf("%s %s=%s", k.typ, k.name, k.instance)
}

// key checks the rate and returns its canonical identity.
func (r ChargeRate) key() (rateKey, error) {
	typ := RateType(strings.ToUpper(string(r.Type)))
	info, ok := rateTypes[typ]
	if !ok {
		return rateKey{}, fmt.Errorf("%w: %q", ErrUnknownRateType, r.Type)
	}
	name, err := canonicalRateName(typ, r.Name)
	if err != nil {
		return rateKey{}, err
	}
	switch {
	case info.nameBased && r.Instance == "":
		return rateKey{}, fmt.Errorf("%w: %s %s needs an instance (a value, or %q)", ErrBadInstance, typ, name, Wildcard)
	case !info.nameBased && r.Instance != "":
		return rateKey{}, fmt.Errorf("%w: %s %s is value-based and takes no instance (got %q)", ErrBadInstance, typ, name, r.Instance)
	}
	if err := checkRate(r.Rate, fmt.Sprintf("%s %s", typ, name)); err != nil {
		return rateKey{}, err
	}
	return rateKey{typ: typ, name: name, instance: strings.ToLower(r.Instance)}, nil
}

// canonicalRateName returns Gold's spelling of a rate name valid for the type.
func canonicalRateName(typ RateType, name string) (string, error) {
	names := valueNames[:]
	if rateTypes[typ].nameBased {
		names = propertyNames[:]
	}
	for _, n := range names {
		if strings.EqualFold(n, name) {
			if typ == VBR && n == "CPUTime" {
				return "", fmt.Errorf("%w: VBR CPUTime would scale CPU seconds by time again; use VBU CPUTime", ErrUnknownRateName)
			}
			return n, nil
		}
	}
	return "", fmt.Errorf("%w: %s %q (want one of %s)", ErrUnknownRateName, typ, name, strings.Join(names, ", "))
}

// checkRate rejects a rate or multiplier that is negative, above 10^12, or
// finer than MaxRatePlaces decimal places.
func checkRate(d decimal.Decimal, what string) error {
	switch {
	case d.IsNegative():
		return fmt.Errorf("%w: %s is %s", ErrNegativeRate, what, d)
	case d.GreaterThan(maxRate):
		return fmt.Errorf("%w: %s is %s (at most %s)", ErrAbsurdRate, what, d, maxRate)
	case !d.Truncate(MaxRatePlaces).Equal(d):
		return fmt.Errorf("%w: %s is %s (at most %d decimal places)", ErrAbsurdRate, what, d, MaxRatePlaces)
	}
	return nil
}

// canonical returns the table as it is stored: Gold's spellings of types,
// names and days. Unknown spellings are left for Validate to report.
func (t RateTable) canonical() RateTable {
	c := t.clone()
	for i, r := range c.Rates {
		c.Rates[i].Type = RateType(strings.ToUpper(string(r.Type)))
		if name, err := canonicalRateName(c.Rates[i].Type, r.Name); err == nil {
			c.Rates[i].Name = name
		}
	}
	for i, w := range c.DaysOfWeek {
		for j, d := range w.Days {
			if day, ok := weekdayByName(d); ok {
				c.DaysOfWeek[i].Days[j] = day.String()
			}
		}
	}
	return c
}

// clone returns a copy that shares no slice with t, so a snapshot (a
// guaranteed quote) cannot change when the original does.
func (t RateTable) clone() RateTable {
	c := t
	c.Rates = append([]ChargeRate(nil), t.Rates...)
	c.TimeOfDay = append([]TimeWindow(nil), t.TimeOfDay...)
	c.DaysOfWeek = append([]DayWindow(nil), t.DaysOfWeek...)
	for i, w := range c.DaysOfWeek {
		c.DaysOfWeek[i].Days = append([]string(nil), w.Days...)
	}
	return c
}
