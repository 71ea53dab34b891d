package digest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/schedule"
)

// Kind is what a condition is about.
type Kind string

// The kinds of conditions a digest tells.
const (
	// Low: a node's available credits (a project's account's, where an
	// HFS share gives it less) are below Rules.LowPercent of what its
	// account's active allocations were given.
	Low Kind = "low"
	// Runway: at the last 30 days' rate (package forecast) a node's
	// credits run out within Rules.RunwayDays, or are gone.
	Runway Kind = "runway"
	// Ending: an account's allocation ends within Rules.EndingDays.
	Ending Kind = "ending"
	// Exhausted: an account's allocation has nothing left.
	Exhausted Kind = "exhausted"
	// LienExpired: a job's lien expired without being settled (the job
	// was never charged nor released); an event, told once.
	LienExpired Kind = "lien-expired"
)

// maxLevel is the worst level: nothing left, or no time.
const maxLevel = 8

// Condition is one thing a digest tells. Level says how bad it is (higher
// is worse; see level), so that a condition that worsens is told again.
type Condition struct {
	Kind       Kind      `json:"kind"`
	Node       string    `json:"node"`
	Allocation uint64    `json:"allocation,omitempty"`
	Lien       uint64    `json:"lien,omitempty"`
	Level      int       `json:"level"`
	At         time.Time `json:"at,omitzero"` // an event's time
	Text       string    `json:"text"`
}

// Key names a condition while it lasts: a digest tells it again only when
// it worsens or after Rules.Repeat.
func (c Condition) Key() string {
	switch {
	case c.Allocation != 0:
		return fmt.Sprintf("%s/%s/%d", c.Kind, c.Node, c.Allocation)
	case c.Lien != 0:
		return fmt.Sprintf("%s/%s/%d", c.Kind, c.Node, c.Lien)
	}
	return string(c.Kind) + "/" + c.Node
}

// event reports whether the condition is a one-off (told once, when it
// happens) rather than a state that lasts.
func (c Condition) event() bool { return c.Kind == LienExpired }

// level is how far below threshold v is, in halvings: 1 below it, 2 below
// half of it, 3 below a quarter, and so on; maxLevel at or below zero.
func level(v, threshold decimal.Decimal) int {
	if !v.IsPositive() {
		return maxLevel
	}
	n, t := 1, threshold.Div(two)
	for n < maxLevel-1 && v.LessThan(t) {
		n, t = n+1, t.Div(two)
	}
	return n
}

var (
	two     = decimal.NewFromInt(2)
	hundred = decimal.NewFromInt(100)
	dayDec  = decimal.NewFromInt(int64(24 * time.Hour / time.Second))
)

// days is d in days, exact to the second.
func days(d time.Duration) decimal.Decimal {
	return decimal.NewFromInt(int64(d / time.Second)).Div(dayDec)
}

// conditions are the bank's conditions now, of every active node, and
// the liens that expired since from.
func conditions(ctx context.Context, l *ledger.Ledger, r Rules, from time.Time) ([]Condition, error) {
	fs, err := forecast.Of(ctx, l, nil)
	if err != nil {
		return nil, err
	}
	p := l.Settings().Precision
	var out []Condition
	for _, f := range fs {
		// Now, with the HFS share (AccountAvailable), and every allocation
		// to start or used up: next says which follows one that ends, and
		// the deposits and the conditions of running out count every one.
		nb, err := l.BalanceWithUpcoming(ctx, f.Node, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("digest: balance of %s: %w", f.Node, err)
		}
		now := nb.At
		given := decimal.Zero
		for _, a := range nb.Allocations {
			if a.Active {
				given = given.Add(a.Deposited)
			}
		}
		if !given.IsPositive() {
			continue // no active allocation: nothing to run low on, nor out of
		}
		// Low compares the account's credits with what its allocations
		// gave: a project of an HFS share has less than its account by
		// design, which its runway tells.
		avail := f.Available
		if nb.AccountAvailable != nil {
			avail = *nb.AccountAvailable
		}
		if pct := avail.Mul(hundred).Div(given); pct.LessThan(r.LowPercent) {
			out = append(out, Condition{Kind: Low, Node: f.Node, Level: level(pct, r.LowPercent),
				Text: fmt.Sprintf("%s has %s left, %s%% of the %s its allocations gave (below %s%%)",
					f.Node, avail.StringFixed(p), pct.Truncate(1), given.StringFixed(p), r.LowPercent)})
		}
		if rate := f.Rate(forecast.LongWindow); rate.RunsOut != nil {
			left := days(rate.RunsOut.Sub(now))
			text := fmt.Sprintf("at the last %d days' rate (%s a day) %s runs out on %s, in %s days",
				rate.Days, rate.PerDay.StringFixed(p), f.Node, local(*rate.RunsOut), left.Truncate(1))
			if !f.Available.IsPositive() {
				text = fmt.Sprintf("%s has nothing left to spend (%s available)", f.Node, f.Available.StringFixed(p))
			}
			if window := decimal.NewFromInt(int64(r.RunwayDays)); left.LessThan(window) {
				out = append(out, Condition{Kind: Runway, Node: f.Node, Level: level(left, window), Text: text})
			}
		}
		if ledger.AccountOf(f.Node) != f.Node {
			continue
		}
		allocs, err := allocationConditions(ctx, l, r, nb, p)
		if err != nil {
			return nil, err
		}
		out = append(out, allocs...)
	}
	expired, err := l.Journal(ctx, ledger.JournalFilter{Kinds: []ledger.Kind{ledger.KindLienExpire}, From: from})
	if err != nil {
		return nil, fmt.Errorf("digest: expired liens: %w", err)
	}
	for _, e := range expired {
		if e.Lien == nil {
			continue
		}
		li := e.Lien
		out = append(out, Condition{Kind: LienExpired, Node: li.Project, Lien: li.ID, Level: 1, At: e.Time,
			Text: fmt.Sprintf("the lien of job %s on %s (%s, user %s, %s) expired at %s without a charge",
				li.JobID, li.Machine, li.Project, li.User, li.Amount.StringFixed(p), local(li.Expires))})
	}
	return out, nil
}

// allocationConditions are the conditions of an account's active
// allocations: ending soon (with what follows), used up.
func allocationConditions(ctx context.Context, l *ledger.Ledger, r Rules, nb ledger.NodeBalance, p int32) ([]Condition, error) {
	now := nb.At
	window := time.Duration(r.EndingDays) * 24 * time.Hour
	var out []Condition
	var upcoming []schedule.Period
	for _, a := range nb.Allocations {
		if !a.Active {
			continue
		}
		if a.Deposited.IsPositive() && !a.Amount.IsPositive() {
			out = append(out, Condition{Kind: Exhausted, Node: nb.Node, Allocation: a.ID, Level: maxLevel,
				Text: fmt.Sprintf("allocation %d of %s is used up: %s left of %s", a.ID, nb.Node, a.Amount.StringFixed(p), a.Deposited.StringFixed(p))})
		}
		if a.End.IsZero() || a.End.Sub(now) >= window {
			continue
		}
		if upcoming == nil {
			var err error
			if upcoming, err = schedule.New(l).Upcoming(ctx, nb.Node, now.Add(window+time.Nanosecond)); err != nil {
				return nil, fmt.Errorf("digest: schedules of %s: %w", nb.Node, err)
			}
		}
		left := days(a.End.Sub(now))
		out = append(out, Condition{Kind: Ending, Node: nb.Node, Allocation: a.ID, Level: level(left, decimal.NewFromInt(int64(r.EndingDays))),
			Text: fmt.Sprintf("allocation %d of %s (%s left of %s) ends on %s, in %s days; %s", a.ID, nb.Node,
				a.Amount.StringFixed(p), a.Deposited.StringFixed(p), local(a.End), left.Truncate(1), next(nb, a.Allocation, upcoming, p))})
	}
	return out, nil
}

// next says what follows allocation a when it ends: an allocation made
// already that starts then or later, or a schedule's next period.
func next(nb ledger.NodeBalance, a ledger.Allocation, upcoming []schedule.Period, p int32) string {
	var says []string
	for _, o := range nb.Allocations {
		if !o.Active && !o.Start.Before(a.End) && (o.Machine == a.Machine) {
			says = append(says, fmt.Sprintf("allocation %d of %s starts on %s", o.ID, o.Deposited.StringFixed(p), local(o.Start)))
		}
	}
	for _, s := range upcoming {
		says = append(says, fmt.Sprintf("schedule %d makes its period %d, of %s, on %s", s.Schedule, s.Index, s.Amount.StringFixed(p), local(s.Start)))
	}
	if len(says) == 0 {
		return "no allocation follows it"
	}
	return "next: " + strings.Join(says, "; ")
}

// local is t as people read it: the local time zone, to the minute.
func local(t time.Time) string { return t.Local().Format("2006-01-02 15:04 MST") }
