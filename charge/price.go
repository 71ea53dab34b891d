package charge

import (
	"cmp"
	"fmt"
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
//
// Price compiles the table each time: a caller pricing many jobs under
// one table compiles it once (RateTable.Compile) and uses its Price.
func Price(table RateTable, policy Policy, shape Shape, u Usage) (Amount, error) {
	c, err := table.compile()
	if err != nil {
		return Amount{}, err
	}
	return c.price(table.Rates, policy, shape, u)
}

// price is Price under the compiled form of a table whose rates are shown.
func (c *compiledTable) price(shown []ChargeRate, policy Policy, shape Shape, u Usage) (Amount, error) {
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
	values := u.Resources.propertyValues()
	if err := c.checkValues(&values); err != nil {
		return Amount{}, err
	}
	segments := []segment{{seconds: q.seconds, multiplier: integer(1)}}
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
	return c.apply(explanation, shown, q, &values, segments), nil
}

// checkValues refuses a job whose value of a priced property (a QOS, a
// partition, a node type, a license) no name-based rate lists, when the
// table has no "*" rate for that property: pricing it as if unlisted
// values cost nothing extra would hide a typo or a new QOS nobody priced.
// A property the job leaves empty matches nothing and is not an error.
func (c *compiledTable) checkValues(values *jobValues) error {
	for property, name := range propertyNames {
		if c.named[property] == nil || c.named[property][Wildcard] != nil {
			continue
		}
		for _, v := range values.of(property) {
			if c.named[property][v.lower] == nil {
				return fmt.Errorf("%w: %s=%s (add a %s=%s rate to accept values the table does not list)",
					ErrUnknownInstance, name, v.value, name, Wildcard)
			}
		}
	}
	return nil
}

// namedValue is a value of a job property and how many of it the job holds.
type namedValue struct {
	value string
	lower string // as rates match it
	count int64
}

// jobValues are a job's values of the name-based properties, looked up
// once for all the rates that match them.
type jobValues struct {
	single   [license]namedValue // QOS, partition and node type, which a job has one of at most
	licenses []namedValue        // by name
}

func (r Resources) propertyValues() jobValues {
	named := func(v string, count int64) namedValue { return namedValue{v, strings.ToLower(v), count} }
	j := jobValues{single: [...]namedValue{qos: named(r.QOS, 1), partition: named(r.Partition, 1), nodeType: named(r.NodeType, 1)}}
	for name, count := range r.Licenses {
		if count > 0 {
			j.licenses = append(j.licenses, named(name, count))
		}
	}
	slices.SortFunc(j.licenses, func(a, b namedValue) int { return strings.Compare(a.value, b.value) })
	return j
}

// of returns the job's values of a property, by its index in propertyNames.
func (j *jobValues) of(property int) []namedValue {
	if property == license {
		return j.licenses
	}
	if j.single[property].value == "" {
		return nil
	}
	return j.single[property : property+1]
}

// match is a rate's quantity for one job: its value-based quantity, or one
// of the job's values of its name-based property.
type match struct {
	what     string
	quantity fraction
}

// applied is a rate that applies to a job: its position in the compiled
// rates and, for a name-based rate, the index in values.of of the job
// value it matches.
type applied struct{ rate, value int }

// applying appends to out the rates that apply to a job, in the order of
// the rates and, for one rate, of the job's values: every value-based
// rate, the name-based rates whose instance is one of the job's values
// (case-insensitively), and a "*" rate for each value that no rate of its
// type and name lists. It looks the job's values up rather than going
// through the rates, so that it costs the same whatever the table lists.
func (c *compiledTable) applying(out []applied, values *jobValues) []applied {
	for _, i := range c.valueBased {
		out = append(out, applied{i, -1})
	}
	for property, named := range c.named {
		if named == nil {
			continue
		}
		for vi, v := range values.of(property) {
			listing := named[v.lower]
			for _, i := range listing {
				out = append(out, applied{i, vi})
			}
			for _, i := range c.wildcards[property] {
				typ := c.rates[i].key.typ
				if !slices.ContainsFunc(listing, func(j int) bool { return c.rates[j].key.typ == typ }) {
					out = append(out, applied{i, vi})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b applied) int { return cmp.Or(a.rate-b.rate, a.value-b.value) })
	return out
}

// match is what an applying rate applies to. A multiplier counts once
// whatever the count (two matlab licenses do not square a multiplier).
func (c *compiledTable) match(a applied, q *chargedQuantities, values *jobValues) match {
	cr := &c.rates[a.rate]
	if !cr.nameBased {
		return match{cr.key.name, q.values[cr.quantity]}
	}
	v := values.of(cr.quantity)[a.value]
	what := cr.what
	switch {
	case cr.key.instance != v.lower: // a "*" rate
		what = cr.key.name + "=" + v.value + " (" + Wildcard + ")"
	case v.value != cr.key.instance:
		what = cr.key.name + "=" + v.value
	}
	count := v.count
	if cr.term == multiplierTerm {
		count = 1
	}
	return match{what, integer(count)}
}

// stretch is what a segment of the WallDuration gives every time-scaled
// item: worked out once, not once per rate.
type stretch struct {
	seconds    int64
	multiplier fraction        // the windows' multipliers × ConsumptionRate
	shown      decimal.Decimal // multiplier as the explanation shows it
	factor     fraction        // seconds × multiplier
	window     string
}

func stretches(segments []segment, consumption fraction) []stretch {
	out := make([]stretch, len(segments))
	for i, s := range segments {
		m := s.multiplier.mul(consumption)
		out[i] = stretch{seconds: s.seconds, multiplier: m, shown: m.display(), factor: integer(s.seconds).mul(m)}
		if !s.from.IsZero() {
			out[i].window = s.String()
		}
	}
	return out
}

// apply fills in the formula. All arithmetic is exact; the only rounding is
// the final half-even rounding to the currency precision.
func (c *compiledTable) apply(e Explanation, shown []ChargeRate, q chargedQuantities, values *jobValues, segments []segment) Amount {
	one := smallWholes[1]
	sums := [feeTerm + 1]fraction{integer(0), integer(0), integer(1), integer(0)}
	var timeScaled []stretch
	var items []LineItem
	rates := c.applying(nil, values)
	for _, a := range rates {
		cr := &c.rates[a.rate]
		m := c.match(a, &q, values)
		// A zero quantity adds nothing; it is left out unless it is a
		// multiplier, where it zeroes the charge and must be seen.
		if m.quantity.sign() == 0 && cr.term != multiplierTerm {
			continue
		}
		if items == nil {
			items = make([]LineItem, 0, c.items(rates, len(segments)))
		}
		perSecond := m.quantity.mul(cr.rate)
		item := LineItem{Type: cr.key.typ, What: m.what, Quantity: m.quantity.display(), Rate: shown[cr.index].Rate, Multiplier: one}
		if cr.term == timeScaledTerm {
			if timeScaled == nil {
				timeScaled = stretches(segments, q.consumption)
			}
			for _, s := range timeScaled {
				subtotal := perSecond.mul(s.factor)
				item.Seconds, item.Multiplier, item.Subtotal, item.Window = s.seconds, s.shown, subtotal.display(), s.window
				items = append(items, item)
				sums[cr.term] = sums[cr.term].add(subtotal)
			}
			continue
		}
		item.Subtotal = perSecond.display()
		items = append(items, item)
		if cr.term == multiplierTerm {
			sums[cr.term] = sums[cr.term].mul(perSecond)
		} else {
			sums[cr.term] = sums[cr.term].add(perSecond)
		}
	}
	exact := sums[timeScaledTerm].add(sums[usageTerm]).mul(sums[multiplierTerm]).add(sums[feeTerm])
	e.Items = items
	e.TimeScaled, e.Usage = sums[timeScaledTerm].display(), sums[usageTerm].display()
	e.Multiplier, e.Fees = sums[multiplierTerm].display(), sums[feeTerm].display()
	e.Exact = exact.display()
	return Amount{Credits: exact.roundHalfEven(c.precision), Explanation: e}
}

// items is how many items the rates that apply to a job give at most:
// one a rate, and one a time-scaled rate and stretch.
func (c *compiledTable) items(rates []applied, stretches int) int {
	n := len(rates)
	for _, a := range rates {
		if c.rates[a.rate].term == timeScaledTerm {
			n += stretches - 1
		}
	}
	return n
}

// Quote prices a request as if the job ran for its whole wallclock limit
// with everything it asked for: its CPUs busy throughout (ConsumptionRate
// 1), and charged under SUCCESSFUL policies. That is the lien amount.
func Quote(table RateTable, policy Policy, shape Shape, req Request) (Amount, error) {
	u, err := req.usage()
	if err != nil {
		return Amount{}, err
	}
	return asQuote(Price(table, policy, shape, u))
}

// usage is the request as Quote prices it.
func (req Request) usage() (Usage, error) {
	if err := req.Resources.validate(); err != nil {
		return Usage{}, err
	}
	if err := checkBounds(bound{"wallclock limit seconds", req.WallclockLimitSeconds, MaxSeconds}); err != nil {
		return Usage{}, err
	}
	if req.WallclockLimitSeconds == 0 {
		return Usage{}, fmt.Errorf("%w: a quote prices the wallclock limit", ErrNoWallclockLimit)
	}
	return Usage{
		Resources:             req.Resources,
		WallclockSeconds:      req.WallclockLimitSeconds,
		WallclockLimitSeconds: req.WallclockLimitSeconds,
		CPUSeconds:            req.Processors * req.WallclockLimitSeconds,
		Start:                 req.Start,
		State:                 Completed,
	}, nil
}

// asQuote turns a job's price into its quote.
func asQuote(a Amount, err error) (Amount, error) {
	if err != nil {
		return Amount{}, err
	}
	a.Explanation.Subject, a.Explanation.State = "quote", 0
	return a, nil
}
