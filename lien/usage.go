package lien

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// ChargeFilter picks charges: those of a node's subtree, of a user, on a
// machine, made in [Since, Until); an empty field picks all.
type ChargeFilter struct {
	Node    string    `json:"node,omitempty"`
	User    string    `json:"user,omitempty"`
	Machine string    `json:"machine,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until,omitzero"`
}

// Matches reports whether f picks ch.
func (f ChargeFilter) Matches(ch ledger.Charge) bool {
	return (f.Node == "" || ch.Project == f.Node || strings.HasPrefix(ch.Project, f.Node+".")) &&
		(f.User == "" || ch.User == f.User) && (f.Machine == "" || ch.Machine == f.Machine) &&
		(f.Since.IsZero() || !ch.Time.Before(f.Since)) && (f.Until.IsZero() || ch.Time.Before(f.Until))
}

// FindCharges lists the charges f picks, in id order (those of the
// bank's archive first). It reads every charge of the bank: a report, not
// a scheduler's call. A period that reaches before the bank's archive
// needs it.
func (b *Bank) FindCharges(ctx context.Context, f ChargeFilter) ([]ledger.Charge, error) {
	var out []ledger.Charge
	err := b.l.View(ctx, func(tx ledger.Tx) error {
		if err := ledger.NeedsArchive(tx, f.Since); err != nil {
			return err
		}
		return tx.Charges(func(ch ledger.Charge) (bool, error) {
			if f.Matches(ch) {
				out = append(out, ch)
			}
			return true, nil
		})
	})
	return out, err
}

// The ways Usage groups charges, and its periods.
var (
	UsageKeys    = []string{"project", "user", "machine"}
	UsagePeriods = []string{"day", "week", "month"}
)

// UsageRow is what charges of one group came to: Charged is what they
// took, Refunded what was given back of it, Net the difference. Period is
// the start of the group's period (zero when not grouped by period); the
// keys not grouped by are empty.
type UsageRow struct {
	Period  time.Time `json:"period,omitzero"`
	Project string    `json:"project,omitempty"`
	User    string    `json:"user,omitempty"`
	Machine string    `json:"machine,omitempty"`
	// Peer is the bank that reported the row: a site where allocations
	// this bank granted were spent (package peer); empty for this bank's
	// own charges.
	Peer     string          `json:"peer,omitempty"`
	Jobs     int             `json:"jobs"`
	Charges  int             `json:"charges"`
	Charged  decimal.Decimal `json:"charged"`
	Refunded decimal.Decimal `json:"refunded"`
	Net      decimal.Decimal `json:"net"`
}

// Usage sums charges by the keys of by (of UsageKeys) and by period ("",
// or one of UsagePeriods, whose days begin at midnight in loc; weeks on
// Monday), like Slurm's sreport and Gold's usage reports. Rows come in
// period order, then by key.
func Usage(charges []ledger.Charge, by []string, period string, loc *time.Location) ([]UsageRow, error) {
	for _, k := range by {
		if !slices.Contains(UsageKeys, k) {
			return nil, fmt.Errorf("%w: usage by %s: want %s", ledger.ErrInvalid, ledger.Excerpt(k), strings.Join(UsageKeys, ", "))
		}
	}
	if period != "" && !slices.Contains(UsagePeriods, period) {
		return nil, fmt.Errorf("%w: usage period %s: want %s", ledger.ErrInvalid, ledger.Excerpt(period), strings.Join(UsagePeriods, ", "))
	}
	rows := map[UsageRow]*UsageRow{}
	jobs := map[UsageRow]map[string]bool{}
	for _, ch := range charges {
		key := UsageRow{Period: PeriodStart(ch.Time, period, loc)}
		for _, k := range by {
			switch k {
			case "project":
				key.Project = ch.Project
			case "user":
				key.User = ch.User
			case "machine":
				key.Machine = ch.Machine
			}
		}
		r := rows[key]
		if r == nil {
			r = &UsageRow{Period: key.Period, Project: key.Project, User: key.User, Machine: key.Machine}
			rows[key], jobs[key] = r, map[string]bool{}
		}
		jobs[key][ch.Machine+"\x00"+ch.JobID] = true
		r.Jobs = len(jobs[key])
		r.Charges++
		r.Charged = r.Charged.Add(ch.Amount)
		r.Refunded = r.Refunded.Add(ch.Refunded)
		r.Net = r.Charged.Sub(r.Refunded)
	}
	out := make([]UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b UsageRow) int {
		if c := a.Period.Compare(b.Period); c != 0 {
			return c
		}
		return strings.Compare(a.Project+"\x00"+a.User+"\x00"+a.Machine, b.Project+"\x00"+b.User+"\x00"+b.Machine)
	})
	return out, nil
}

// PeriodStart is the start of t's period (one of UsagePeriods) in loc:
// its day's midnight, its week's Monday or its month's first day; zero for
// no period.
func PeriodStart(t time.Time, period string, loc *time.Location) time.Time {
	t = t.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	switch period {
	case "day":
		return day
	case "week":
		return day.AddDate(0, 0, -(int(day.Weekday())+6)%7)
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
	}
	return time.Time{}
}

// PeriodAdd is the start of the period n periods after the one that
// starts at start (before it, for n < 0), counted in start's zone: a day
// is from midnight to midnight, whatever a change of summer time makes of
// its length.
func PeriodAdd(start time.Time, period string, n int) time.Time {
	switch period {
	case "day":
		return start.AddDate(0, 0, n)
	case "week":
		return start.AddDate(0, 0, 7*n)
	case "month":
		return start.AddDate(0, n, 0)
	}
	return start
}
