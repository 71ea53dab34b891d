package web_test

import (
	"github.com/shopspring/decimal"

	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/ledger"
)

// TestManagerForms: a manager adds and removes a member of a project of
// theirs and an admin transfers between accounts, each change journaled
// with the session's client as the actor; sending a form again is a retry
// the bank makes once; a user, a manager out of scope and a form without
// the session's CSRF token are refused, with the API's words, and nothing
// changes.
func TestManagerForms(t *testing.T) {
	s := newSite(t)
	s.seed(2)
	mgr := s.signedIn("chemmgr")
	page := mgr.get("/node?name=chem.lab2")
	if !strings.Contains(page.body, `id="members-form"`) || strings.Contains(page.body, `id="transfer-form"`) {
		t.Fatalf("the manager's chem.lab2: no members form, or a transfer form on a project:\n%s", page.body)
	}
	form := url.Values{"csrf": {hidden(t, page.body, "csrf")}, "request": {hidden(t, page.body, "request")}, "node": {"chem.lab2"}, "user": {"bob"}, "op": {"add"}}
	before := len(journal(t, s))
	for range 2 { // the second is a retry
		if a := mgr.post("/members", form); a.status != http.StatusSeeOther {
			t.Fatalf("add bob: %d\n%s", a.status, a.body)
		}
	}
	entries := journal(t, s)
	if len(entries) != before+1 || entries[len(entries)-1].Actor != "client:chemmgr" {
		t.Errorf("adding bob: %d entries, the last by %s", len(entries)-before, entries[len(entries)-1].Actor)
	}
	if !isMember(t, s, "bob", "chem.lab2") {
		t.Errorf("bob is not a member of chem.lab2")
	}
	page = mgr.get("/node?name=chem.lab2")
	form.Set("request", hidden(t, page.body, "request"))
	form.Set("op", "remove")
	if a := mgr.post("/members", form); a.status != http.StatusSeeOther || isMember(t, s, "bob", "chem.lab2") {
		t.Errorf("remove bob: %d, still a member: %v", a.status, isMember(t, s, "bob", "chem.lab2"))
	}

	// Refused: out of the manager's scope, a user's session, a bad token.
	before = len(journal(t, s))
	page = mgr.get("/node?name=chem.lab2")
	form.Set("request", hidden(t, page.body, "request"))
	form.Set("node", "bio.lab1")
	if a := mgr.post("/members", form); a.status != http.StatusForbidden || !strings.Contains(a.body, "bio.lab1") {
		t.Errorf("chemmgr on bio.lab1: %d\n%s", a.status, a.body)
	}
	amy := s.signedIn("amy")
	home := amy.get("/node?name=chem.lab1")
	if strings.Contains(home.body, `id="members-form"`) {
		t.Errorf("amy is shown the manager's forms")
	}
	userForm := url.Values{"csrf": {hidden(t, home.body, "csrf")}, "request": {"0123456789abcdef0123456789abcdef"}, "node": {"chem.lab1"}, "user": {"bob"}, "op": {"add"}}
	if a := amy.post("/members", userForm); a.status != http.StatusForbidden || !strings.Contains(a.body, "client amy (role user) may not POST /v1/users/modify") {
		t.Errorf("amy's member change: %d\n%s", a.status, a.body)
	}
	transfer := url.Values{"csrf": {hidden(t, home.body, "csrf")}, "request": {"0123456789abcdef0123456789abcdee"}, "from": {"chem"}, "to": {"bio"}, "amount": {"100"}}
	if a := amy.post("/transfer", transfer); a.status != http.StatusForbidden || !strings.Contains(a.body, "may not POST /v1/transfers") {
		t.Errorf("amy's transfer: %d\n%s", a.status, a.body)
	}
	transfer.Set("csrf", strings.Repeat("A", 43))
	if a := mgr.post("/transfer", transfer); a.status != http.StatusForbidden {
		t.Errorf("a transfer without the session's token: %d", a.status)
	}
	if a := mgr.post("/transfer", url.Values{"csrf": {hidden(t, page.body, "csrf")}, "request": {"0123456789abcdef0123456789abcded"}, "from": {"chem"}, "to": {"bio"}, "amount": {"100"}}); a.status != http.StatusForbidden || !strings.Contains(a.body, "bio") {
		t.Errorf("chemmgr's transfer to bio: %d\n%s", a.status, a.body)
	}
	if after := len(journal(t, s)); after != before {
		t.Errorf("refused forms wrote %d entries", after-before)
	}

	// An admin transfers from chem to bio.
	root := s.signedIn("root")
	page = root.get("/node?name=chem")
	chem, bio := s.MustBalance("chem"), s.MustBalance("bio")
	if a := root.post("/transfer", url.Values{"csrf": {hidden(t, page.body, "csrf")}, "request": {requestOf(t, page.body, "transfer-form")}, "from": {"chem"}, "to": {"bio"}, "amount": {"1000"}}); a.status != http.StatusSeeOther {
		t.Fatalf("root's transfer: %d\n%s", a.status, a.body)
	}
	if got := s.MustBalance("chem"); !got.Amount.Equal(chem.Amount.Sub(ledgerAmount(1000))) || !s.MustBalance("bio").Amount.Equal(bio.Amount.Add(ledgerAmount(1000))) {
		t.Errorf("after the transfer: chem %s, bio %s", got.Amount, s.MustBalance("bio").Amount)
	}
	entries = journal(t, s)
	if last := entries[len(entries)-1]; last.Kind != ledger.KindTransfer || last.Actor != "client:root" {
		t.Errorf("the transfer's entry: %s by %s", last.Kind, last.Actor)
	}
}

// journal is the bank's journal.
func journal(t *testing.T, s *site) []ledger.Entry {
	t.Helper()
	entries, err := s.Journal(context.Background(), ledger.JournalFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// requestOf is the request id of the form id in a page.
func requestOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no form %s", id)
	}
	return hidden(t, page[i:], "request")
}

func ledgerAmount(n int64) decimal.Decimal { return decimal.NewFromInt(n) }

// isMember reports whether user is a member of node.
func isMember(t *testing.T, s *site, user, node string) bool {
	t.Helper()
	users, err := s.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(users, func(u ledger.User) bool { return u.Name == user })
	return i >= 0 && slices.ContainsFunc(users[i].Memberships, func(m ledger.Membership) bool { return m.Node == node })
}

// TestQuotaForm: a manager previews a project's new quota, the split
// before and after as `hfs show` and its dry run have them, nothing
// changed; the confirm sets it, journaled with the manager as the actor,
// and the split is then the preview's; a quota the API refuses is refused
// with its words at the preview and at the confirm, and a user's session
// is refused both, changing nothing.
func TestQuotaForm(t *testing.T) {
	s := newSite(t)
	s.seed(3)
	ctx := context.Background()
	mgr := s.signedIn("chemmgr")
	page := mgr.get("/node?name=chem.lab1")
	if !strings.Contains(page.body, `id="quota-form"`) || !strings.Contains(page.body, `value="dynamic:0.6"`) {
		t.Fatalf("the manager's chem.lab1 has no quota form with its quota:\n%s", page.body)
	}
	before := len(journal(t, s))
	preview := mgr.get("/policy?" + url.Values{"node": {"chem.lab1"}, "quota": {"dynamic:0.9"}}.Encode())
	if preview.status != http.StatusOK {
		t.Fatalf("preview: %d\n%s", preview.status, preview.body)
	}
	now, err := s.Shares(ctx, "chem")
	if err != nil {
		t.Fatal(err)
	}
	with, err := s.Shares(ctx, "chem", ledger.QuotaChange{Node: "chem.lab1", Kind: ledger.QuotaDynamic, Quota: decimal.RequireFromString("0.9")})
	if err != nil {
		t.Fatal(err)
	}
	if len(journal(t, s)) != before {
		t.Fatal("the preview wrote to the journal")
	}
	for i, n := range with.Nodes {
		for field, want := range map[string]decimal.Decimal{"quota-before": now.Nodes[i].Quota, "quota": n.Quota, "allocated": n.Allocated,
			"available": n.LienAvailable, "unused": n.Available} {
			if got := cell(t, preview.body, n.Name, field); got != report.Grouped(want, 2) {
				t.Errorf("preview of %s: %s %q, want %q", n.Name, field, got, report.Grouped(want, 2))
			}
		}
	}
	form := url.Values{"csrf": {hidden(t, preview.body, "csrf")}, "request": {requestOf(t, preview.body, "policy-form")}, "node": {"chem.lab1"}, "quota": {"dynamic:0.9"}}
	for range 2 { // the second is a retry
		if a := mgr.post("/policy", form); a.status != http.StatusSeeOther {
			t.Fatalf("save: %d\n%s", a.status, a.body)
		}
	}
	entries := journal(t, s)
	if len(entries) != before+1 || entries[len(entries)-1].Kind != ledger.KindNodeModify || entries[len(entries)-1].Actor != "client:chemmgr" {
		t.Errorf("saving: %d entries, the last %s by %s", len(entries)-before, entries[len(entries)-1].Kind, entries[len(entries)-1].Actor)
	}
	after, err := s.Shares(ctx, "chem")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range after.Nodes {
		if !n.Quota.Equal(with.Nodes[i].Quota) || !n.Allocated.Equal(with.Nodes[i].Allocated) || n.Policy.QuotaText() != with.Nodes[i].Policy.QuotaText() {
			t.Errorf("%s after saving: %s %s %s; the preview had %s %s %s", n.Name, n.Policy.QuotaText(), n.Quota, n.Allocated,
				with.Nodes[i].Policy.QuotaText(), with.Nodes[i].Quota, with.Nodes[i].Allocated)
		}
	}

	// Refused: a quota the API refuses, a user's session.
	before = len(journal(t, s))
	if a := mgr.get("/policy?node=chem.lab1&quota=dynamic:1.5"); a.status != http.StatusBadRequest || !strings.Contains(a.body, "dynamic quota 1.5 is not a fraction between 0 and 1") {
		t.Errorf("preview of dynamic:1.5: %d\n%s", a.status, a.body)
	}
	form.Set("quota", "dynamic:1.5")
	form.Set("request", "0123456789abcdef0123456789abcdef")
	if a := mgr.post("/policy", form); a.status != http.StatusBadRequest || !strings.Contains(a.body, "dynamic quota 1.5 is not a fraction between 0 and 1") {
		t.Errorf("save of dynamic:1.5: %d\n%s", a.status, a.body)
	}
	amy := s.signedIn("amy")
	home := amy.get("/node?name=chem.lab1")
	if strings.Contains(home.body, `id="quota-form"`) {
		t.Error("amy is shown the quota form")
	}
	if a := amy.get("/policy?node=chem.lab1&quota=dynamic:0.5"); a.status != http.StatusForbidden {
		t.Errorf("amy's preview: %d\n%s", a.status, a.body)
	}
	userForm := url.Values{"csrf": {hidden(t, home.body, "csrf")}, "request": {"0123456789abcdef0123456789abcdee"}, "node": {"chem.lab1"}, "quota": {"dynamic:0.5"}}
	if a := amy.post("/policy", userForm); a.status != http.StatusForbidden || !strings.Contains(a.body, "client amy (role user) may not POST /v1/nodes/modify") {
		t.Errorf("amy's quota change: %d\n%s", a.status, a.body)
	}
	userForm.Set("csrf", strings.Repeat("A", 43))
	if a := mgr.post("/policy", userForm); a.status != http.StatusForbidden {
		t.Errorf("a quota change without the session's token: %d", a.status)
	}
	if got := len(journal(t, s)); got != before {
		t.Errorf("refused quota forms wrote %d entries", got-before)
	}
}
