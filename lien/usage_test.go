package lien_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

func TestUsage(t *testing.T) {
	utc := time.UTC
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	ch := func(job, project, user, amount, refunded, when string) ledger.Charge {
		return ledger.Charge{JobRef: ledger.JobRef{JobID: job, Machine: "hpc1", Project: project, User: user},
			Amount: decimal.RequireFromString(amount), Refunded: decimal.RequireFromString(refunded), Time: at(when)}
	}
	charges := []ledger.Charge{
		ch("j1", "chem.lab1", "amy", "10", "0", "2026-11-02T10:00:00Z"), // Monday
		ch("j1", "chem.lab1", "amy", "5", "1", "2026-11-03T10:00:00Z"),  // the same job again (incremental)
		ch("j2", "chem.lab2", "bob", "7", "0", "2026-11-08T23:00:00Z"),  // Sunday
		ch("j3", "chem.lab1", "bob", "3", "0", "2026-12-01T00:30:00Z"),
	}
	rows, err := lien.Usage(charges, []string{"project"}, "week", utc)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		week, project          string
		jobs, charges          int
		charged, refunded, net string
	}{
		{"2026-11-02T00:00:00Z", "chem.lab1", 1, 2, "15", "1", "14"},
		{"2026-11-02T00:00:00Z", "chem.lab2", 1, 1, "7", "0", "7"},
		{"2026-11-30T00:00:00Z", "chem.lab1", 1, 1, "3", "0", "3"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i, w := range want {
		r := rows[i]
		if !r.Period.Equal(at(w.week)) || r.Project != w.project || r.User != "" || r.Jobs != w.jobs || r.Charges != w.charges ||
			!r.Charged.Equal(decimal.RequireFromString(w.charged)) || !r.Refunded.Equal(decimal.RequireFromString(w.refunded)) || !r.Net.Equal(decimal.RequireFromString(w.net)) {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	// Months begin where the reader is: in UTC−5, December's first charge
	// is still November's.
	est := time.FixedZone("EST", -5*3600)
	if rows, _ := lien.Usage(charges, nil, "month", est); len(rows) != 1 || !rows[0].Charged.Equal(decimal.NewFromInt(25)) {
		t.Errorf("by month in UTC−5: %+v", rows)
	}
	if rows, _ := lien.Usage(charges, []string{"user"}, "", utc); len(rows) != 2 || rows[0].User != "amy" || !rows[1].Charged.Equal(decimal.NewFromInt(10)) {
		t.Errorf("by user: %+v", rows)
	}
	for _, bad := range [][2]string{{"account", ""}, {"user", "year"}} {
		if _, err := lien.Usage(charges, []string{bad[0]}, bad[1], utc); err == nil {
			t.Errorf("usage by %q per %q was made", bad[0], bad[1])
		}
	}
}

// TestPeriods: periods start at local midnights, Mondays and first days,
// and step by whole days and months across a change of summer time.
func TestPeriods(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	at := time.Date(2026, 3, 29, 12, 30, 0, 0, paris) // a Sunday, the day summer time begins
	for _, tc := range []struct {
		period      string
		start, next string
	}{
		{"day", "2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00"},
		{"week", "2026-03-23T00:00:00+01:00", "2026-03-30T00:00:00+02:00"},
		{"month", "2026-03-01T00:00:00+01:00", "2026-04-01T00:00:00+02:00"},
	} {
		start := lien.PeriodStart(at, tc.period, paris)
		if got := start.Format(time.RFC3339); got != tc.start {
			t.Errorf("%s of %s starts %s, want %s", tc.period, at, got, tc.start)
		}
		next := lien.PeriodAdd(start, tc.period, 1)
		if got := next.Format(time.RFC3339); got != tc.next {
			t.Errorf("the %s after %s starts %s, want %s", tc.period, start, got, tc.next)
		}
		if back := lien.PeriodAdd(next, tc.period, -1); !back.Equal(start) {
			t.Errorf("the %s before %s starts %s, want %s", tc.period, next, back, start)
		}
	}
}

// TestFindCharges: the bank's charges picked by node, user, machine and
// time.
func TestFindCharges(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	for _, id := range []string{"a", "b"} {
		s.mustPlace(id, 1, 60)
		s.mustCharge(lien.ChargeSpec{Job: job(id), Usage: s.usage(1, 30, 60, 0, charge.Completed)})
		s.Clock.Advance(time.Hour)
	}
	all, err := s.lb.FindCharges(context.Background(), lien.ChargeFilter{Node: "chem"})
	if err != nil || len(all) != 2 {
		t.Fatalf("chem's charges: %v %v", all, err)
	}
	for _, tc := range []struct {
		f    lien.ChargeFilter
		want int
	}{
		{lien.ChargeFilter{Node: "chem.lab1", User: "amy", Machine: "hpc1"}, 2},
		{lien.ChargeFilter{Node: "bio"}, 0},
		{lien.ChargeFilter{Node: "chem.lab"}, 0}, // not a prefix of chem.lab1's name
		{lien.ChargeFilter{User: "bob"}, 0},
		{lien.ChargeFilter{Since: all[1].Time}, 1},
		{lien.ChargeFilter{Until: all[1].Time}, 1},
	} {
		if got, err := s.lb.FindCharges(context.Background(), tc.f); err != nil || len(got) != tc.want {
			t.Errorf("FindCharges(%+v) = %d charges, %v; want %d", tc.f, len(got), err, tc.want)
		}
	}
}
