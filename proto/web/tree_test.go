package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// TestTreeRollUp: where a project has sub-projects, the HFS tree shows
// each node's policy and its subtree's quota, usage and liens rolled up
// (hfs show's, whose figures are the ledger's Shares): a group with no
// charges of its own shows what its sub-projects used.
func TestTreeRollUp(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	for _, n := range []ledger.NodeSpec{
		{Name: "chem.lab1.x", Policy: ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: decimal.RequireFromString("0.5")}},
		{Name: "chem.lab1.y", Policy: ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: decimal.RequireFromString("0.5")}},
	} {
		if _, err := s.CreateNode(ctx, s.Req(), n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ModifyUser(ctx, s.Req(), "amy", ledger.UserChange{Add: []ledger.Membership{{Node: "chem.lab1.x", Role: ledger.RoleMember}, {Node: "chem.lab1.y", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	for i, project := range []string{"chem.lab1.x", "chem.lab1.y", "chem.lab1.y"} {
		job := lien.Job{Machine: "hpc1", ID: "sub-" + project + "-" + string(rune('a'+i))}
		req := charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 3600}
		if _, err := s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: job, User: "amy", Project: project, Request: req}); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			break // left open: reserved
		}
		start := s.Clock.Now()
		used := charge.Usage{Resources: req.Resources, WallclockSeconds: 1800, WallclockLimitSeconds: 3600, Start: start, End: start.Add(1800e9), State: charge.Completed}
		if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job, Usage: used}); err != nil {
			t.Fatal(err)
		}
	}
	shares, err := s.Shares(ctx, "chem")
	if err != nil {
		t.Fatal(err)
	}
	if !shares.Groups() {
		t.Fatalf("chem.lab1 has sub-projects: %+v", shares.Nodes)
	}
	byName := map[string]ledger.NodeShare{}
	for _, n := range shares.Nodes {
		byName[n.Name] = n
	}
	lab1, x, y := byName["chem.lab1"], byName["chem.lab1.x"], byName["chem.lab1.y"]
	if !lab1.Used.IsZero() || !lab1.SubtreeUsed.Equal(x.Used.Add(y.Used)) || x.Used.IsZero() || !lab1.SubtreeReserved.Equal(y.Reserved) || y.Reserved.IsZero() ||
		!byName["chem"].SubtreeUsed.Equal(lab1.SubtreeUsed) || lab1.SubtreeQuota.LessThan(x.Quota.Add(y.Quota)) {
		t.Errorf("the roll-up: chem %+v\nlab1 %+v\nx %+v\ny %+v", byName["chem"], lab1, x, y)
	}
	page := s.signedIn("chemmgr").get("/node?name=chem")
	if page.status != http.StatusOK {
		t.Fatalf("chem: %d", page.status)
	}
	for _, n := range shares.Nodes {
		for field, want := range map[string]string{"subtree_quota": report.Grouped(n.SubtreeQuota, 2), "subtree_used": report.Grouped(n.SubtreeUsed, 2),
			"subtree_reserved": report.Grouped(n.SubtreeReserved, 2)} {
			if got := cell(t, page.body, n.Name, field); got != want {
				t.Errorf("%s's %s is %s, want %s", n.Name, field, got, want)
			}
		}
	}
	if got := cell(t, page.body, "chem.lab1.x", "policy"); got != "dynamic:0.5" {
		t.Errorf("chem.lab1.x's policy: %q", got)
	}
	// Without sub-projects, no subtree columns.
	if s := newSite(t); strings.Contains(s.signedIn("chemmgr").get("/node?name=chem").body, "subtree_used") {
		t.Errorf("a tree without groups shows subtree figures")
	}
}

// TestStatementPage: an account's statement as a page has the figures of
// the ledger's statement (ingot statement's), its lines, and the CSV's
// link; a user who does not read the account is refused it as a node she
// does not read.
func TestStatementPage(t *testing.T) {
	s := newSite(t)
	s.seed(5)
	first := s.Clock.Now().AddDate(0, 0, -10).In(time.Local)
	from := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, time.Local)
	to := from.AddDate(0, 0, 11)
	q := "account=chem&from=" + from.Format(time.DateOnly) + "&to=" + to.AddDate(0, 0, -1).Format(time.DateOnly)
	page := s.signedIn("chemmgr").get("/statement?" + q)
	if page.status != http.StatusOK {
		t.Fatalf("the statement: %d\n%s", page.status, page.body)
	}
	st, err := s.Statement(context.Background(), "chem", from, to, false)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]decimal.Decimal{"beginning": st.Beginning, "credits": st.Credits, "debits": st.Debits.Neg(), "ending": st.Ending} {
		if got := cell(t, page.body, "", field); got != report.Grouped(want, 2) {
			t.Errorf("%s: %s, want %s", field, got, report.Grouped(want, 2))
		}
	}
	if got := len(tableRows(t, page.body, "debits")); got != len(st.DebitLines) || got == 0 {
		t.Errorf("%d debit lines, want %d", got, len(st.DebitLines))
	}
	if !strings.Contains(page.body, `href="/statement.csv?`+strings.ReplaceAll(q, "&", "&amp;")+`"`) {
		t.Errorf("no link to the CSV:\n%s", page.body)
	}
	amy := s.signedIn("amy")
	if a := amy.get("/statement?" + q); a.status != http.StatusNotFound || a.body != amy.get("/node?name=nothing").body {
		t.Errorf("amy on chem's statement: %d", a.status)
	}
}

// TestAllocationUsedShare: an account's page says how much of each
// allocation is used, of what was deposited in it.
func TestAllocationUsedShare(t *testing.T) {
	s := newSite(t)
	if _, err := s.Withdraw(context.Background(), s.Req(), ledger.WithdrawSpec{Account: "bio", Amount: decimal.NewFromInt(1_250_000)}); err != nil {
		t.Fatal(err)
	}
	page := s.signedIn("root").get("/node?name=bio")
	if got := cell(t, page.body, "", "used_share"); got != "25.0%" {
		t.Errorf("bio's allocation is %s used, want 25.0%% (1,250,000 of 5,000,000)", got)
	}
}
