package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// BenchmarkProjectPage serves chem.lab1's page to amy from a bank with a
// year of daily usage (365 days of her jobs, and bob's every other day),
// in process: the bar is 100 ms a page on the server. Per month,
// the page's charts span the whole year; per day, its last 31 days. The
// bar is absolute, not a ratio to a baseline as the storage benchmarks'
// are: it is the time a person waits for the page, and the page's reads
// of the bank (every charge of the bank, for the usage) are most of it.
func BenchmarkProjectPage(b *testing.B) {
	s := newSite(b)
	s.seed(365)
	get := s.pageGetter(b, "amy")
	for _, period := range []string{"month", "day"} {
		b.Run("period="+period, func(b *testing.B) {
			for b.Loop() {
				get("/node?name=chem.lab1&by=user&period=" + period)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}

// BenchmarkAccountPage serves, to an admin, the page of an account of 10
// projects and 20 users with a year of daily usage (a job of each project
// every day, its user one of the 20 in turn), its chart stacked by
// project, per month (the whole year) and per day. Its baseline is the
// page of one of its projects, served just before in the same run
// (project_ms/op): the bar is x_project, the account's page at
// most 3 times one project's.
func BenchmarkAccountPage(b *testing.B) {
	s := newSite(b)
	s.seedAccount(b, "phys", 10, 20, 365)
	get := s.pageGetter(b, "root")
	for _, period := range []string{"month", "day"} {
		b.Run("period="+period, func(b *testing.B) {
			const baselineRuns = 20
			start := time.Now()
			for range baselineRuns {
				get("/node?name=phys.p3&period=" + period)
			}
			project := time.Since(start) / baselineRuns
			for b.Loop() {
				get("/node?name=phys&period=" + period)
			}
			account := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(account.Microseconds())/1000, "ms/op")
			b.ReportMetric(float64(project.Microseconds())/1000, "project_ms/op")
			b.ReportMetric(float64(account)/float64(project), "x_project")
		})
	}
}

// pageGetter returns a function that serves a page to who's session in
// process and fails the benchmark unless it is 200.
func (s *site) pageGetter(b *testing.B, who string) func(path string) {
	browser := s.signedIn(who)
	u, _ := url.Parse(s.url)
	cookies := browser.client.Jar.Cookies(u)
	return func(path string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		s.handler.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d\n%s", path, w.Code, w.Body)
		}
	}
}

// seedAccount makes account with projects projects (ACCOUNT.p0 …) and
// users users (ACCOUNT-u0 …, each a member of every project), and days of
// usage: each day a job of each project, charged for half of its hour,
// its user the next in turn; the bank's clock moves a day after each.
func (s *site) seedAccount(b *testing.B, account string, projects, users, days int) {
	b.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		if err != nil {
			b.Fatalf("seeding %s: %v", account, err)
		}
	}
	must(s.CreateNode(ctx, s.Req(), ledger.NodeSpec{Name: account}))
	var members []ledger.Membership
	for p := range projects {
		name := fmt.Sprintf("%s.p%d", account, p)
		must(s.CreateNode(ctx, s.Req(), ledger.NodeSpec{Name: name}))
		members = append(members, ledger.Membership{Node: name, Role: ledger.RoleMember})
	}
	for u := range users {
		must(s.AddUser(ctx, s.Req(), ledger.UserSpec{Name: fmt.Sprintf("%s-u%d", account, u), Memberships: members}))
	}
	must(s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: account, Amount: decimal.NewFromInt(100_000_000), End: s.Clock.Now().AddDate(2, 0, 0)}))
	job := 0
	for range days {
		for p := range projects {
			job++
			ref := lien.Job{Machine: "hpc1", ID: fmt.Sprintf("%s-%d", account, job)}
			req := charge.Request{Resources: charge.Resources{Processors: 2}, WallclockLimitSeconds: 3600}
			must(s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: ref, User: fmt.Sprintf("%s-u%d", account, job%users), Project: fmt.Sprintf("%s.p%d", account, p), Request: req}))
			start := s.Clock.Now()
			must(s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: ref, Usage: charge.Usage{Resources: req.Resources, WallclockSeconds: 1800, WallclockLimitSeconds: 3600,
				Start: start, End: start.Add(30 * time.Minute), State: charge.Completed}}))
		}
		s.Clock.Advance(24 * time.Hour)
	}
}
