package forecast

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// The windows of a forecast, in days.
const (
	ShortWindow = 7
	LongWindow  = 30
)

// windows are the windows every forecast has, in this order.
var windows = []int{ShortWindow, LongWindow}

const day = 24 * time.Hour

// horizon is the longest runway given a date, in seconds: 100 years (of
// 365 days). Past it the pace gives none, as without use: a date that far
// says nothing, and a time.Duration holds no more than 292 years.
var horizon = decimal.NewFromInt(100 * 365 * int64(day/time.Second))

// Forecast is one node's pace of spending and where it leads.
type Forecast struct {
	Node string    `json:"node"`
	At   time.Time `json:"at"`
	// Available is what the node may spend now (see package doc).
	Available decimal.Decimal `json:"available"`
	// AllocationsEnd is the latest end of the allocations active now;
	// nil when one of them never ends, or none is active.
	AllocationsEnd *time.Time `json:"allocations_end,omitempty"`
	// Rates are one per window: the last 7 days, then the last 30.
	Rates []Rate `json:"rates"`
}

// Rate is the use of one window and the run-out time at its pace.
type Rate struct {
	Days int `json:"days"`
	// Charged is the window's use, net of refunds (exact).
	Charged decimal.Decimal `json:"charged"`
	// PerDay is Charged ÷ Days, rounded to the bank's precision plus two
	// places: for reading; RunsOut is computed from Charged.
	PerDay decimal.Decimal `json:"per_day"`
	// RunsOut is when the credits available now are gone at this pace; nil
	// when the window had no use, or it is more than 100 years away.
	RunsOut *time.Time `json:"runs_out,omitempty"`
	// DaysBeforeEnd is the whole days from RunsOut to AllocationsEnd
	// (negative: the allocations end first); nil without both.
	DaysBeforeEnd *int64 `json:"days_before_end,omitempty"`
}

// Rate is the forecast's rate over a window of days (ShortWindow or
// LongWindow); the zero Rate for another.
func (f Forecast) Rate(days int) Rate {
	for _, r := range f.Rates {
		if r.Days == days {
			return r
		}
	}
	return Rate{}
}

// Of forecasts each node named, now, in the order given; nil names
// means every node of the bank, in name order.
func Of(ctx context.Context, l *ledger.Ledger, names []string) ([]Forecast, error) {
	if names == nil {
		nodes, err := l.Nodes(ctx, "")
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			names = append(names, n.Name)
		}
	}
	out := make([]Forecast, 0, len(names))
	balances := make([]ledger.NodeBalance, 0, len(names))
	for _, name := range names {
		nb, err := l.BalanceAt(ctx, name, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("forecast of %s: %w", name, err)
		}
		balances = append(balances, nb)
	}
	if len(balances) == 0 {
		return out, nil
	}
	now := balances[0].At
	used, err := charged(ctx, l, names, now)
	if err != nil {
		return nil, err
	}
	precision := l.Settings().Precision
	for i, nb := range balances {
		out = append(out, Compute(nb, used[i], now, precision))
	}
	return out, nil
}

// charged is, for each node named and each window, the use net of
// refunds of the charges in the window ending at now. It reads the
// journal's charges and refunds of the last window only (from the
// accounts' index), not every charge the bank holds: a refund's entry
// carries its charge's new state, so the last entry of a charge has what
// is left of it.
func charged(ctx context.Context, l *ledger.Ledger, names []string, now time.Time) ([][]decimal.Decimal, error) {
	used := make([][]decimal.Decimal, len(names))
	for i := range used {
		used[i] = make([]decimal.Decimal, len(windows))
	}
	oldest := now.Add(-time.Duration(windows[len(windows)-1]) * day)
	for _, account := range accountsOf(names) {
		entries, err := l.Journal(ctx, ledger.JournalFilter{Node: account, Kinds: []ledger.Kind{ledger.KindCharge, ledger.KindRefund}, From: oldest})
		if err != nil {
			return nil, fmt.Errorf("forecast: charges of %s: %w", account, err)
		}
		last := map[uint64]*ledger.Charge{}
		var order []uint64
		for _, e := range entries {
			if e.Charge == nil {
				continue
			}
			if _, seen := last[e.Charge.ID]; !seen {
				order = append(order, e.Charge.ID)
			}
			last[e.Charge.ID] = e.Charge
		}
		for _, id := range order {
			c := last[id]
			if c.Time.Before(oldest) || c.Time.After(now) {
				continue
			}
			net := c.Amount.Sub(c.Refunded)
			for i, name := range names {
				if !ledger.InSubtree(c.Project, name) {
					continue
				}
				for w, days := range windows {
					if !c.Time.Before(now.Add(-time.Duration(days) * day)) {
						used[i][w] = used[i][w].Add(net)
					}
				}
			}
		}
	}
	return used, nil
}

// accountsOf are the accounts of the nodes named, each once.
func accountsOf(names []string) []string {
	var out []string
	for _, n := range names {
		if a := ledger.AccountOf(n); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Compute is the forecast of a node whose balance now is nb, given its
// use in each window (ShortWindow, LongWindow), for a bank of precision
// decimal places.
func Compute(nb ledger.NodeBalance, used []decimal.Decimal, now time.Time, precision int32) Forecast {
	f := Forecast{Node: nb.Node, At: now, Available: nb.Available, AllocationsEnd: allocationsEnd(nb, now)}
	for w, days := range windows {
		f.Rates = append(f.Rates, rate(days, used[w], nb.Available, now, f.AllocationsEnd, precision))
	}
	return f
}

func rate(days int, used, available decimal.Decimal, now time.Time, end *time.Time, precision int32) Rate {
	r := Rate{Days: days, Charged: used, PerDay: used.DivRound(decimal.NewFromInt(int64(days)), precision+2)}
	if !used.IsPositive() {
		return r
	}
	out := now
	if available.IsPositive() {
		window := decimal.NewFromInt(int64(days) * int64(day/time.Second))
		seconds, _ := available.Mul(window).QuoRem(used, 0)
		if seconds.GreaterThan(horizon) {
			return r
		}
		out = now.Add(time.Duration(seconds.IntPart()) * time.Second)
	}
	r.RunsOut = &out
	if end != nil {
		before := int64(end.Sub(out) / day)
		r.DaysBeforeEnd = &before
	}
	return r
}

// allocationsEnd is the latest end of the allocations active at now that
// still hold credits (a used-up one gives none, and the balance lists
// only the used-up ones that end first); nil if one never ends or none is
// active.
func allocationsEnd(nb ledger.NodeBalance, now time.Time) *time.Time {
	var end time.Time
	for _, a := range nb.Allocations {
		if !a.Active || a.UsedUp() {
			continue
		}
		if a.End.IsZero() {
			return nil
		}
		if a.End.After(end) {
			end = a.End
		}
	}
	if end.IsZero() {
		return nil
	}
	return &end
}
