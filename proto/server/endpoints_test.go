package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// withLiens places a lien of amy's (chem.lab1) and one of bob's (bio.lab1)
// on hpc1, and one of amy's on hpc2.
func (s *site) withLiens() {
	s.t.Helper()
	for i, p := range []lien.PlaceSpec{placeSpec("hpc1", "a1"), placeSpec("hpc1", "b1"), placeSpec("hpc2", "a2")} {
		if p.ID == "b1" {
			p.User = "bob"
		}
		var r lien.LienResult
		s.ok(exchange{key: s.keys["root"], method: "POST", target: api.PathLiens, body: p, requestID: fmt.Sprintf("lien-%d", i)}, &r)
	}
}

func (s *site) jobs(key, target string) []string {
	s.t.Helper()
	var l api.List[ledger.Lien]
	s.ok(exchange{key: s.keys[key], method: "GET", target: target}, &l)
	var jobs []string
	for _, x := range l.Items {
		jobs = append(jobs, x.JobID)
	}
	return jobs
}

// TestListsFilterByReach: every client lists only what it reads.
func TestListsFilterByReach(t *testing.T) {
	s := newSite(t)
	s.withLiens()
	for _, tc := range []struct {
		client string
		want   []string
	}{
		{"root", []string{"a1", "b1", "a2"}},
		{"amy", []string{"a1", "a2"}},
		{"chemmgr", []string{"a1", "a2"}},
		{"sched", []string{"a1", "b1"}},
	} {
		if got := s.jobs(tc.client, api.PathLiens); !slices.Equal(got, tc.want) {
			t.Errorf("%s lists liens %v, want %v", tc.client, got, tc.want)
		}
	}
	var balances api.BalancesResponse
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: api.PathBalances}, &balances)
	if len(balances.Balances) != 1 || balances.Balances[0].Node != "chem.lab1" {
		t.Errorf("amy's balances: %+v", balances.Balances)
	}
	var nodes api.List[ledger.Node]
	s.ok(exchange{key: s.keys["chemmgr"], method: "GET", target: api.PathNodes}, &nodes)
	if len(nodes.Items) != 2 || nodes.Items[0].Name != "chem" || nodes.Items[1].Name != "chem.lab1" {
		t.Errorf("the manager's nodes: %+v", nodes.Items)
	}
	var users api.List[ledger.User]
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: api.PathUsers}, &users)
	if len(users.Items) != 1 || users.Items[0].Name != "amy" {
		t.Errorf("amy's users: %+v", users.Items)
	}
	// Another project's job and a job that does not exist get the same
	// answer: a user learns neither that the job exists nor whose it is.
	answers := map[string]string{}
	for _, job := range []string{"b1", "nosuchjob"} {
		w := s.do(exchange{key: s.keys["amy"], method: "GET", target: api.PathLien + "?machine=hpc1&job_id=" + job})
		answers[job] = strings.ReplaceAll(w.Body.String(), job, "JOB")
		wantError(t, w, http.StatusNotFound, api.CodeNotFound, "no lien for job "+job+" on hpc1")
	}
	if answers["b1"] != answers["nosuchjob"] {
		t.Errorf("amy tells another project's job from none:\n%s\n%s", answers["b1"], answers["nosuchjob"])
	}
	wantError(t, s.do(exchange{key: s.keys["sched"], method: "GET", target: api.PathLien + "?machine=hpc2&job_id=nope"}),
		http.StatusForbidden, api.CodeForbidden, `may not read the lien of job nope on machine "hpc2"`)
}

// TestJournalIsScoped: an admin reads the whole journal; another client
// names a node it reads and gets only the entries about its subtree.
func TestJournalIsScoped(t *testing.T) {
	s := newSite(t)
	s.withLiens()
	var entries api.List[ledger.Entry]
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: api.PathJournal + "?node=chem.lab1"}, &entries)
	if len(entries.Items) == 0 {
		t.Fatal("amy reads no entry of chem.lab1")
	}
	for _, e := range entries.Items {
		if !ledger.InSubtree(e.Node, "chem.lab1") {
			t.Errorf("amy reads entry %d about %q", e.Seq, e.Node)
		}
	}
	wantError(t, s.do(exchange{key: s.keys["amy"], method: "GET", target: api.PathJournal}),
		http.StatusForbidden, api.CodeForbidden, "may not read the whole journal")
	wantError(t, s.do(exchange{key: s.keys["chemmgr"], method: "GET", target: api.PathJournal + "?node=bio"}),
		http.StatusForbidden, api.CodeForbidden, "may not read bio")
	var all api.List[ledger.Entry]
	s.ok(exchange{key: s.keys["root"], method: "GET", target: api.PathJournal + "?limit=2"}, &all)
	if len(all.Items) != 2 || int(all.Items[1].Seq) != s.JournalLen() {
		t.Errorf("the admin's two newest entries: %+v", all.Items)
	}
}

// TestClientKeysOverTheWire: an admin makes a client; its key is in the
// answer, once, and signs; lists never show sealed secrets.
func TestClientKeysOverTheWire(t *testing.T) {
	s := newSite(t)
	var made api.NewKeyResponse
	s.ok(exchange{key: s.keys["root"], method: "POST", target: api.PathClients,
		body: api.ClientRequest{Name: "bobcli", Role: clients.RoleUser, Scope: []string{"bob"}}, requestID: "c1"}, &made)
	key, err := auth.ParseKeyFile([]byte(made.KeyFile))
	if err != nil {
		t.Fatalf("key file %q: %v", made.KeyFile, err)
	}
	var nb ledger.NodeBalance
	s.ok(exchange{key: key, method: "GET", target: api.PathBalance + "?node=bio.lab1"}, &nb)
	var list api.List[clients.Client]
	w := s.do(exchange{key: s.keys["root"], method: "GET", target: api.PathClients})
	if strings.Contains(w.Body.String(), "sealed") || w.Code != http.StatusOK {
		t.Errorf("client list: %d %s", w.Code, w.Body)
	}
	s.ok(exchange{key: s.keys["root"], method: "GET", target: api.PathClients}, &list)
	if len(list.Items) != 5 {
		t.Errorf("%d clients listed, want 5", len(list.Items))
	}
	s.Clock.Advance(time.Second)
	journal := s.JournalLen()
	// A retry (the answer was lost) gets the key the first request made,
	// unsealed again, and makes nothing.
	var again api.NewKeyResponse
	s.ok(exchange{key: s.keys["root"], method: "POST", target: api.PathClients,
		body: api.ClientRequest{Name: "bobcli", Role: clients.RoleUser, Scope: []string{"bob"}}, requestID: "c1"}, &again)
	if again.KeyFile != made.KeyFile {
		t.Errorf("a retry answered key file %q, first %q", again.KeyFile, made.KeyFile)
	}
	if got := s.JournalLen(); got != journal {
		t.Errorf("a retry wrote %d entries", got-journal)
	}
	wantError(t, s.do(exchange{key: s.keys["root"], method: "POST", target: api.PathClients,
		body: api.ClientRequest{Name: "bobcli", Role: clients.RoleManager, Scope: []string{"bio"}}, requestID: "c1"}),
		http.StatusConflict, api.CodeRequestConflict, "c1")
}

// TestManagerChangesBelowItsNodes: a manager makes and changes projects
// below the nodes it manages, not those nodes nor accounts.
func TestManagerChangesBelowItsNodes(t *testing.T) {
	s := newSite(t)
	mgr := s.keys["chemmgr"]
	var n ledger.Node
	s.ok(exchange{key: mgr, method: "POST", target: api.PathNodes, body: ledger.NodeSpec{Name: "chem.lab2"}, requestID: "n1"}, &n)
	limit := decimal.NewFromInt(10)
	s.ok(exchange{key: mgr, method: "POST", target: api.PathNodeModify,
		body: api.Modify[ledger.NodeChange]{Name: "chem.lab2", Change: ledger.NodeChange{Policy: &ledger.Policy{Limit: &limit}}}, requestID: "n2"}, &n)
	if n.Policy.Limit == nil || !n.Policy.Limit.Equal(limit) {
		t.Errorf("chem.lab2 after the change: %+v", n)
	}
	for _, tc := range []struct {
		target string
		body   any
		says   string
	}{
		{api.PathNodes, ledger.NodeSpec{Name: "phys"}, "may not create phys: it is not below a node it manages"},
		{api.PathNodeDeactivate, api.NameRequest{Name: "chem"}, "may not deactivate chem"},
		{api.PathNodeModify, api.Modify[ledger.NodeChange]{Name: "bio.lab1"}, "may not change bio.lab1"},
	} {
		journal := s.JournalLen()
		wantError(t, s.do(exchange{key: mgr, method: "POST", target: tc.target, body: tc.body, requestID: "refused"}),
			http.StatusForbidden, api.CodeForbidden, tc.says)
		if got := s.JournalLen(); got != journal {
			t.Errorf("%s: a refusal wrote %d entries", tc.target, got-journal)
		}
	}
}

func TestMethodNotAllowedNamesTheMethods(t *testing.T) {
	s := newSite(t)
	w := s.do(exchange{key: s.keys["root"], method: "DELETE", target: api.PathLiens})
	wantError(t, w, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "use POST, GET")
	if got := w.Header().Get("Allow"); got != "POST, GET" {
		t.Errorf("Allow: %q", got)
	}
}
