package webtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// Bank is a bank being seeded, at its ledger's clock.
type Bank struct {
	tb   testing.TB
	l    *ledger.Ledger
	lb   *lien.Bank
	reqs int
	jobs int
}

// Seed makes the nodes, the machine, the users and the allocations (ten
// million credits in chem, five in bio, for two years) in the bank of l.
func Seed(tb testing.TB, l *ledger.Ledger) *Bank {
	tb.Helper()
	b := &Bank{tb: tb, l: l, lb: lien.New(l)}
	ctx := context.Background()
	nodes := []ledger.NodeSpec{{Name: "chem"}, {Name: "bio"}, {Name: "bio.lab1"},
		{Name: "chem.lab1", Policy: ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: decimal.RequireFromString("0.6")}},
		{Name: "chem.lab2", Policy: ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: decimal.RequireFromString("0.4")}}}
	for _, spec := range nodes {
		b.must(l.CreateNode(ctx, b.req(), spec))
	}
	b.must(l.AddMachine(ctx, b.req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32}}))
	for _, u := range []struct{ name, project string }{{"amy", "chem.lab1"}, {"bob", "bio.lab1"}} {
		b.must(l.AddUser(ctx, b.req(), ledger.UserSpec{Name: u.name, DefaultProject: u.project,
			Memberships: []ledger.Membership{{Node: u.project, Role: ledger.RoleMember}}}))
	}
	end := l.Now().AddDate(2, 0, 0)
	b.must(l.Deposit(ctx, b.req(), ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(10_000_000), End: end, Description: "grant"}))
	b.must(l.Deposit(ctx, b.req(), ledger.DepositSpec{Account: "bio", Amount: decimal.NewFromInt(5_000_000), End: end}))
	return b
}

// Days runs a day of jobs days times, moving the bank's clock a day on
// with advance after each: each day a job of amy's on chem.lab1 (two
// processors for 10 to 70 minutes, by the day of the week, charged for
// half), every other day one of bob's on bio.lab1 (one processor, half an
// hour of an hour). Then it leaves a lien of amy's open: four processors
// for an hour.
func (b *Bank) Days(days int, advance func(time.Duration)) {
	b.tb.Helper()
	for d := range days {
		b.job("amy", 2, int64(600*(d%7+1)), false)
		if d%2 == 0 {
			b.job("bob", 1, 3600, false)
		}
		advance(24 * time.Hour)
	}
	b.job("amy", 4, 3600, true)
}

// job runs a job of user's on hpc1: a lien for procs × seconds, and
// unless open a final charge for half of it.
func (b *Bank) job(user string, procs, seconds int64, open bool) {
	b.tb.Helper()
	ctx := context.Background()
	b.jobs++
	job := lien.Job{Machine: "hpc1", ID: fmt.Sprintf("job-%d", b.jobs)}
	req := charge.Request{Resources: charge.Resources{Processors: procs}, WallclockLimitSeconds: seconds}
	b.must(b.lb.Place(ctx, b.req(), lien.PlaceSpec{Job: job, User: user, Request: req}))
	if open {
		return
	}
	start := b.l.Now()
	used := charge.Usage{Resources: req.Resources, WallclockSeconds: seconds / 2, WallclockLimitSeconds: seconds,
		Start: start, End: start.Add(time.Duration(seconds/2) * time.Second), State: charge.Completed}
	b.must(b.lb.Charge(ctx, b.req(), lien.ChargeSpec{Job: job, Usage: used}))
}

func (b *Bank) req() ledger.Request {
	b.reqs++
	return ledger.Request{Actor: "webtest", ID: fmt.Sprintf("seed-%d", b.reqs)}
}

// must fails the test on an error of a seeding step.
func (b *Bank) must(_ any, err error) {
	b.tb.Helper()
	if err != nil {
		b.tb.Fatalf("seeding the bank: %v", err)
	}
}
