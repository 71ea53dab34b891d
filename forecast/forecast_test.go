package forecast_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
)

const day = 24 * time.Hour

// site is a bank (audited when the test ends) with account chem, its
// project chem.lab1 and user amy in it, and machine hpc1 at the default
// rates: a job of one processor for n seconds costs n credits.
type site struct {
	*ledgertest.Bank
	lb   *lien.Bank
	t    *testing.T
	jobs int
}

func newSite(t *testing.T) *site {
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem", "chem.lab1", "bio")
	ctx := context.Background()
	if _, err := b.AddMachine(ctx, b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32, MemoryMB: 128000}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddUser(ctx, b.Req(), ledger.UserSpec{Name: "amy", DefaultProject: "chem.lab1", Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	return &site{Bank: b, lb: lien.New(b.Ledger), t: t}
}

// use charges a job of amy's on chem.lab1 costing credits now, and
// returns its charge's id.
func (s *site) use(credits int64) uint64 {
	s.t.Helper()
	s.jobs++
	ctx := context.Background()
	j := lien.Job{Machine: "hpc1", ID: time.Duration(s.jobs).String()}
	if _, err := s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: j, User: "amy", Request: charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: credits}}); err != nil {
		s.t.Fatalf("place: %v", err)
	}
	start := s.Clock.Now()
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: credits, WallclockLimitSeconds: credits,
		Start: start, End: start.Add(time.Duration(credits) * time.Second), State: charge.Completed}
	r, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: j, Usage: u})
	if err != nil {
		s.t.Fatalf("charge: %v", err)
	}
	return r.Charge.ID
}

func (s *site) refund(id uint64, amount string) {
	s.t.Helper()
	if _, err := s.lb.Refund(context.Background(), s.Req(), lien.RefundSpec{Charge: id, Amount: decimal.RequireFromString(amount)}); err != nil {
		s.t.Fatalf("refund: %v", err)
	}
}

// want is a window's figures worked out by hand: the charged sum, the
// rate a day, the run-out as seconds after now (-1: none) and the days
// before the allocations end (nil: none).
type want struct {
	charged, perDay string
	runway          int64
	beforeEnd       *int64
}

func days(n int64) *int64 { return &n }

func (s *site) check(node, available string, end *time.Time, short, long want) {
	s.t.Helper()
	fs, err := forecast.Of(context.Background(), s.Ledger, []string{node})
	if err != nil || len(fs) != 1 {
		s.t.Fatalf("forecast of %s: %v %v", node, fs, err)
	}
	f := fs[0]
	now := s.Clock.Now()
	if f.Node != node || !f.At.Equal(now) || !f.Available.Equal(decimal.RequireFromString(available)) {
		s.t.Errorf("%s: node %s at %s available %s, want available %s at %s", node, f.Node, f.At, f.Available, available, now)
	}
	if (end == nil) != (f.AllocationsEnd == nil) || end != nil && !end.Equal(*f.AllocationsEnd) {
		s.t.Errorf("%s: allocations end %v, want %v", node, f.AllocationsEnd, end)
	}
	for _, c := range []struct {
		days int
		want want
	}{{forecast.ShortWindow, short}, {forecast.LongWindow, long}} {
		r := f.Rate(c.days)
		if r.Days != c.days || !r.Charged.Equal(decimal.RequireFromString(c.want.charged)) || !r.PerDay.Equal(decimal.RequireFromString(c.want.perDay)) {
			s.t.Errorf("%s over %d days: charged %s (%s a day), want %s (%s)", node, c.days, r.Charged, r.PerDay, c.want.charged, c.want.perDay)
		}
		switch {
		case c.want.runway < 0 && r.RunsOut != nil:
			s.t.Errorf("%s over %d days: runs out %s, want no date", node, c.days, r.RunsOut)
		case c.want.runway >= 0 && (r.RunsOut == nil || !r.RunsOut.Equal(now.Add(time.Duration(c.want.runway)*time.Second))):
			s.t.Errorf("%s over %d days: runs out %v, want %s", node, c.days, r.RunsOut, now.Add(time.Duration(c.want.runway)*time.Second))
		}
		if (c.want.beforeEnd == nil) != (r.DaysBeforeEnd == nil) || c.want.beforeEnd != nil && *c.want.beforeEnd != *r.DaysBeforeEnd {
			s.t.Errorf("%s over %d days: days before end %v, want %v", node, c.days, r.DaysBeforeEnd, c.want.beforeEnd)
		}
	}
}

// TestSteadyUse: 100 credits a day for 30 days of 10000 leaves 7000, 70
// days at 100 a day; the allocation ends in 90.
func TestSteadyUse(t *testing.T) {
	s := newSite(t)
	end := ledgertest.Epoch.Add(120 * day)
	s.MustDeposit("chem", "10000", end)
	for range 30 {
		s.use(100)
		s.Clock.Advance(day)
	}
	w := want{charged: "700", perDay: "100", runway: 70 * 86400, beforeEnd: days(20)}
	s.check("chem", "7000", &end, w, want{charged: "3000", perDay: "100", runway: 70 * 86400, beforeEnd: days(20)})
	// The project spends all its account spends; bio spends nothing.
	s.check("chem.lab1", "7000", &end, w, want{charged: "3000", perDay: "100", runway: 70 * 86400, beforeEnd: days(20)})
	s.check("bio", "0", nil, want{charged: "0", perDay: "0", runway: -1}, want{charged: "0", perDay: "0", runway: -1})
}

// TestBurst: one job of 2100 three days ago, in an allocation that never
// ends. 7900 left: at 300 a day (the week) 7900×7÷2100 days = 26 d 8 h;
// at 70 a day (the month) 7900×30×86400÷2100 s = 9750857.14 s, rounded
// down.
func TestBurst(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "10000", time.Time{})
	s.Clock.Advance(27 * day)
	s.use(2100)
	s.Clock.Advance(3 * day)
	s.check("chem", "7900", nil,
		want{charged: "2100", perDay: "300", runway: (26*24 + 8) * 3600},
		want{charged: "2100", perDay: "70", runway: 9750857})
}

// TestNoUse: credits and no charges give no date, not a guess; nothing
// available and no use is no date either.
func TestNoUse(t *testing.T) {
	s := newSite(t)
	end := ledgertest.Epoch.Add(30 * day)
	s.MustDeposit("chem", "500", end)
	s.Clock.Advance(10 * day)
	none := want{charged: "0", perDay: "0", runway: -1}
	s.check("chem", "500", &end, none, none)
	s.check("bio", "0", nil, none, none)
}

// TestRefund: a refund counts with the charge it returns, never against a
// window the charge is not in. 500 charged at day 0 (out of both windows
// at day 40) is refunded in full at day 40; 60 of the 100 charged at day
// 37 is refunded. Over 30 days: 3000 − 60 = 2940; over 7: 700 − 60 =
// 640. Left: 10000 − 500 − 3000 + 500 + 60 = 7060, so the month's pace
// gives 7060×30×86400÷2940 = 6224326.53 s, the week's 7060×7×86400÷640
// = 6671700 s; the allocation ends 60 days after now: 5184000 s, which
// is 12.04 days before the month's date and 17.2 before the week's.
func TestRefund(t *testing.T) {
	s := newSite(t)
	end := ledgertest.Epoch.Add(100 * day)
	s.MustDeposit("chem", "10000", end)
	first := s.use(500)
	s.Clock.Advance(10 * day)
	var partly uint64
	for d := 10; d < 40; d++ {
		id := s.use(100)
		if d == 37 {
			partly = id
		}
		s.Clock.Advance(day)
	}
	s.refund(first, "500")
	s.refund(partly, "60")
	s.check("chem", "7060", &end,
		want{charged: "640", perDay: "91.4286", runway: 6671700, beforeEnd: days(-17)},
		want{charged: "2940", perDay: "98", runway: 6224326, beforeEnd: days(-12)})
}

// TestRunOut: a project with nothing left has run out now.
func TestRunOut(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "300", time.Time{})
	s.use(300)
	s.Clock.Advance(day)
	s.check("chem", "0", nil,
		want{charged: "300", perDay: "42.8571", runway: 0},
		want{charged: "300", perDay: "10", runway: 0})
}

// TestAllocationsEndLeavesOutUsedUp: the allocations' end a runway is
// measured against is that of the allocations that still hold credits:
// one used up (withdrawn to nothing here), whatever its end (none, or
// later), does not count, however many others are used up. (It counted
// when the balance listed it, and the balance lists the used-up ones
// that end first: the figure changed with how many there were.)
func TestAllocationsEndLeavesOutUsedUp(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	end := ledgertest.Epoch.Add(120 * day)
	s.MustDeposit("chem", "10000", end)
	for i := range int64(ledger.UpcomingListed + 1) {
		for _, ends := range []time.Time{ledgertest.Epoch.Add((60 + time.Duration(i)) * day), {}, ledgertest.Epoch.Add(400 * day)} {
			id := s.MustDeposit("chem", "1", ends)
			if _, err := s.Withdraw(ctx, s.Req(), ledger.WithdrawSpec{Account: "chem", Amount: decimal.NewFromInt(1), Allocation: id}); err != nil {
				t.Fatal(err)
			}
		}
		f, err := forecast.Of(ctx, s.Ledger, []string{"chem"})
		if err != nil || len(f) != 1 || f[0].AllocationsEnd == nil || !f[0].AllocationsEnd.Equal(end) {
			t.Fatalf("with %d used up: %+v %v, want the allocations to end at %s", 3*(i+1), f, err, end)
		}
	}
}
