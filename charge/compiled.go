package charge

import (
	"slices"
	"sync/atomic"
)

// CompiledTable is a rate table checked and put in the form pricing
// needs. Checking and compiling a table costs more than pricing a job
// with it, so a caller that prices many jobs under one table compiles it
// once. It is safe for concurrent use.
type CompiledTable struct {
	table    RateTable // a copy of the table, whose spelling of the rates the explanations show
	compiled compiledTable
}

// Compile checks the table as Validate does and compiles it.
func (t RateTable) Compile() (*CompiledTable, error) {
	c, err := t.compile()
	if err != nil {
		return nil, err
	}
	return &CompiledTable{table: t.clone(), compiled: c}, nil
}

// Price is the package's Price under the compiled table.
func (c *CompiledTable) Price(policy Policy, shape Shape, u Usage) (Amount, error) {
	return c.compiled.price(c.table.Rates, policy, shape, u)
}

// Quote is the package's Quote under the compiled table.
func (c *CompiledTable) Quote(policy Policy, shape Shape, req Request) (Amount, error) {
	u, err := req.usage()
	if err != nil {
		return Amount{}, err
	}
	return asQuote(c.Price(policy, shape, u))
}

// recentTables are the tables Price and Quote compiled last, newest first,
// so that pricing job after job under the same table compiles it once.
// The slice is never changed, only replaced.
var recentTables atomic.Pointer[[]*CompiledTable]

// recentTablesKept bounds recentTables: a bank prices under its current
// table and a few guaranteed quotes' frozen ones.
const recentTablesKept = 8

// compiled is the compiled form of a table that prices as t does, from
// recentTables if one is there, else compiled now and kept.
func compiled(t RateTable) (*compiledTable, error) {
	var recent []*CompiledTable
	if p := recentTables.Load(); p != nil {
		recent = *p
	}
	for _, c := range recent {
		if c.table.pricesAs(t) {
			return &c.compiled, nil
		}
	}
	c, err := t.Compile()
	if err != nil {
		return nil, err
	}
	// Two goroutines may replace the slice at once and one entry be
	// lost: it is compiled again when next needed.
	recent = append([]*CompiledTable{c}, recent[:min(len(recent), recentTablesKept-1)]...)
	recentTables.Store(&recent)
	return &c.compiled, nil
}

// pricesAs reports whether t and u compile alike: the same precision,
// zone, rates and windows, with the same spellings (an error or a label
// may show them) and the same values, however written ("1.50" and "1.5"
// price alike; the explanation shows the caller's own spelling). A
// rate's description plays no part in pricing. A field added to RateTable
// must be compared here.
func (t RateTable) pricesAs(u RateTable) bool {
	return t.Precision == u.Precision && t.Location == u.Location &&
		slices.EqualFunc(t.Rates, u.Rates, func(a, b ChargeRate) bool {
			return a.Type == b.Type && a.Name == b.Name && a.Instance == b.Instance && a.Rate.Equal(b.Rate)
		}) &&
		slices.EqualFunc(t.TimeOfDay, u.TimeOfDay, func(a, b TimeWindow) bool {
			return a.Name == b.Name && a.Start == b.Start && a.End == b.End && a.Multiplier.Equal(b.Multiplier)
		}) &&
		slices.EqualFunc(t.DaysOfWeek, u.DaysOfWeek, func(a, b DayWindow) bool {
			return a.Name == b.Name && slices.Equal(a.Days, b.Days) && a.Multiplier.Equal(b.Multiplier)
		})
}
