package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
	"github.com/ingot-hpc/ingot/schedule"
)

// site is a bank with accounts chem (project chem.lab1, user amy) and bio
// (project bio.lab1, user bob), machines hpc1 and hpc2, 1000 credits in
// each account, and one client of each role: root (admin), chemmgr
// (manager of chem), sched (scheduler of hpc1) and amy (user amy).
type site struct {
	*ledgertest.Bank
	t    *testing.T
	reg  *clients.Registry
	srv  *server.Server
	keys map[string]auth.Key
	log  *bytes.Buffer
}

func newSite(t *testing.T, opts ...server.Option) *site {
	t.Helper()
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem", "chem.lab1", "bio", "bio.lab1")
	for _, m := range []string{"hpc1", "hpc2"} {
		if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: m, Shape: ledger.Shape{Cores: 32}}); err != nil {
			t.Fatal(err)
		}
	}
	for user, project := range map[string]string{"amy": "chem.lab1", "bob": "bio.lab1"} {
		spec := ledger.UserSpec{Name: user, DefaultProject: project, Memberships: []ledger.Membership{{Node: project, Role: ledger.RoleMember}}}
		if _, err := b.AddUser(context.Background(), b.Req(), spec); err != nil {
			t.Fatal(err)
		}
	}
	b.MustDeposit("chem", "1000", time.Time{})
	b.MustDeposit("bio", "1000", time.Time{})

	reg, err := clients.New(b.Ledger, [32]byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{Bank: b, t: t, reg: reg, keys: map[string]auth.Key{}, log: &bytes.Buffer{}}
	s.addClient("root", clients.RoleAdmin)
	s.addClient("chemmgr", clients.RoleManager, "chem")
	s.addClient("sched", clients.RoleScheduler, "hpc1")
	s.addClient("amy", clients.RoleUser, "amy")
	v := &auth.Verifier{Lookup: server.KeyLookup(reg), Now: b.Clock.Now}
	s.srv = server.New(b.Ledger, lien.New(b.Ledger), reg, v, slog.New(slog.NewJSONHandler(s.log, nil)), opts...)
	return s
}

func (s *site) addClient(name string, role clients.Role, scope ...string) {
	s.t.Helper()
	_, key, err := s.reg.Add(context.Background(), s.Req(), clients.Spec{Name: name, Role: role, Scope: scope})
	if err != nil {
		s.t.Fatalf("add client %s: %v", name, err)
	}
	s.keys[name] = key
}

// exchange is one request to send: built, signed with key at the bank's
// clock, then changed by tamper (if any) before it is served.
type exchange struct {
	key       auth.Key
	method    string
	target    string
	body      any // marshalled unless []byte
	requestID string
	signedAt  time.Time // zero: the bank's clock
	tamper    func(*http.Request)
}

func (s *site) request(e exchange) *http.Request {
	s.t.Helper()
	body, ok := e.body.([]byte)
	if !ok && e.body != nil {
		var err error
		if body, err = json.Marshal(e.body); err != nil {
			s.t.Fatal(err)
		}
	}
	r := httptest.NewRequest(e.method, e.target, bytes.NewReader(body))
	if e.requestID != "" {
		r.Header.Set(api.HeaderRequestID, e.requestID)
	}
	at := e.signedAt
	if at.IsZero() {
		at = s.Clock.Now()
	}
	if err := auth.Sign(r, body, e.key, at); err != nil {
		s.t.Fatal(err)
	}
	if e.tamper != nil {
		e.tamper(r)
	}
	return r
}

func (s *site) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.srv.ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		s.t.Errorf("%s %s: Content-Type %q, want application/json", r.Method, r.URL, ct)
	}
	return w
}

func (s *site) do(e exchange) *httptest.ResponseRecorder { return s.serve(s.request(e)) }

// ok sends e, wants 200, and decodes the answer into out.
func (s *site) ok(e exchange, out any) {
	s.t.Helper()
	w := s.do(e)
	if w.Code != http.StatusOK {
		s.t.Fatalf("%s %s: status %d, want 200: %s", e.method, e.target, w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
		s.t.Fatalf("%s %s: decode %s: %v", e.method, e.target, w.Body, err)
	}
}

// wantError checks a refusal: its status, code, and a message containing
// msg.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, code api.Code, msg string) {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("answer %q is not an api.Error: %v", w.Body, err)
	}
	if w.Code != status || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("got %d %s %q; want %d %s with a message containing %q", w.Code, e.Code, e.Message, status, code, msg)
	}
	if e.Details == nil {
		t.Errorf("error without details object: %s", w.Body)
	}
}

func (s *site) balance(node string) ledger.NodeBalance {
	s.t.Helper()
	var nb ledger.NodeBalance
	s.ok(exchange{key: s.keys["root"], method: "GET", target: "/v1/balance?node=" + node}, &nb)
	return nb
}

func wantAmount(t *testing.T, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(decimal.RequireFromString(want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func placeSpec(machine, job string) lien.PlaceSpec {
	return lien.PlaceSpec{Job: lien.Job{Machine: machine, ID: job}, User: "amy",
		Request: charge.Request{Resources: charge.Resources{Processors: 4}, WallclockLimitSeconds: 60}}
}

func TestSchedulerQuotesPlacesCharges(t *testing.T) {
	s := newSite(t)
	sched := s.keys["sched"]

	var q lien.QuoteResult
	s.ok(exchange{key: sched, method: "POST", target: "/v1/quotes",
		body: lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: placeSpec("hpc1", "").Request}}, &q)
	wantAmount(t, "quote", q.Amount.Credits, "240") // 4 processors × 60 s at one credit each
	if q.Project != "chem.lab1" {
		t.Errorf("quote for project %q, want chem.lab1", q.Project)
	}

	var placed lien.LienResult
	s.ok(exchange{key: sched, method: "POST", target: "/v1/liens", body: placeSpec("hpc1", "job1"), requestID: "place-job1"}, &placed)
	wantAmount(t, "lien", placed.Lien.Amount, "240")
	wantAmount(t, "reserved after the lien", s.balance("chem").Reserved, "240")

	usage := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 30, WallclockLimitSeconds: 60, State: charge.Completed}
	var charged lien.ChargeResult
	s.ok(exchange{key: sched, method: "POST", target: "/v1/charges",
		body: lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: "job1"}, Usage: usage}, requestID: "charge-job1"}, &charged)
	wantAmount(t, "charge", charged.Charge.Amount, "120")
	after := s.balance("chem")
	wantAmount(t, "reserved after the charge", after.Reserved, "0")
	wantAmount(t, "amount after the charge", after.Amount, "880")
}

func TestSchedulerReleasesLien(t *testing.T) {
	s := newSite(t)
	sched := s.keys["sched"]
	var placed lien.LienResult
	s.ok(exchange{key: sched, method: "POST", target: "/v1/liens", body: placeSpec("hpc1", "job2"), requestID: "p2"}, &placed)
	var released ledger.Lien
	s.ok(exchange{key: sched, method: "POST", target: "/v1/liens/release",
		body: api.ReleaseRequest{Machine: "hpc1", ID: "job2"}, requestID: "r2"}, &released)
	if released.State != ledger.LienReleased {
		t.Errorf("lien state %q after release", released.State)
	}
	wantAmount(t, "reserved after the release", s.balance("chem").Reserved, "0")
}

func TestManagerDepositsInsideSubtree(t *testing.T) {
	s := newSite(t)
	var r ledger.Receipt
	s.ok(exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/deposits",
		body: ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(500)}, requestID: "dep-1"}, &r)
	wantAmount(t, "chem after the deposit", s.balance("chem").Amount, "1500")
	var nb ledger.NodeBalance
	s.ok(exchange{key: s.keys["chemmgr"], method: "GET", target: "/v1/balance?node=chem.lab1"}, &nb)
}

func TestUserReadsOwnProject(t *testing.T) {
	s := newSite(t)
	var nb ledger.NodeBalance
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: "/v1/balance?node=chem.lab1"}, &nb)
	wantAmount(t, "amy's project's balance", nb.Balance.Balance, "1000")
	var av api.AvailableResponse
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: "/v1/available?project=chem.lab1"}, &av)
	wantAmount(t, "available", av.Available, "1000")
}

func TestAdminReadsAllBalances(t *testing.T) {
	s := newSite(t)
	var all api.BalancesResponse
	s.ok(exchange{key: s.keys["root"], method: "GET", target: "/v1/balances"}, &all)
	if len(all.Balances) != 2 || all.Balances[0].Node != "bio" || all.Balances[1].Node != "chem" {
		t.Errorf("balances: %+v", all.Balances)
	}
}

func TestRetryReturnsFirstAnswer(t *testing.T) {
	s := newSite(t)
	deposit := exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/deposits",
		body: ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(5)}, requestID: "retry-me"}
	var first, second ledger.Receipt
	s.ok(deposit, &first)
	journal := s.JournalLen()
	s.Clock.Advance(time.Second)
	s.ok(deposit, &second) // signed afresh: a new nonce
	if first.Seq != second.Seq || !first.Time.Equal(second.Time) {
		t.Errorf("retry answered entry %d at %s, first %d at %s", second.Seq, second.Time, first.Seq, first.Time)
	}
	if got := s.JournalLen(); got != journal {
		t.Errorf("journal grew from %d to %d on a retry", journal, got)
	}
	wantAmount(t, "chem after a deposit and its retry", s.balance("chem").Amount, "1005")

	deposit.body = ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(6)}
	wantError(t, s.do(deposit), http.StatusConflict, api.CodeRequestConflict, "retry-me")
}

func TestHealth(t *testing.T) {
	s := newSite(t)
	w := s.serve(httptest.NewRequest("GET", "/healthz", nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"ok"`) {
		t.Errorf("healthz: %d %s", w.Code, w.Body)
	}
}

// TestRefusals: every refusal has its status, code and a clear message,
// and writes nothing.
func TestRefusals(t *testing.T) {
	s := newSite(t)
	deposit := ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}
	revokedKey := s.revokedKey()
	wrongSecret := s.keys["root"]
	wrongSecret.Secret[0] ^= 1
	unknown, err := auth.NewKey("nobody.00000000")
	if err != nil {
		t.Fatal(err)
	}
	setBody := func(body string) func(*http.Request) {
		return func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader(body)) }
	}
	s.wantRefusals(t, []refusal{
		{"tampered body", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: deposit, requestID: "t1",
			tamper: setBody(`{"account":"chem","amount":"1000000"}`)}, 401, api.CodeUnauthenticated, "signature does not match"},
		{"tampered path", exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/deposits", body: ledger.TransferSpec{From: "chem", To: "bio", Amount: decimal.NewFromInt(1)}, requestID: "t2",
			tamper: func(r *http.Request) { r.URL.Path = "/v1/transfers" }}, 401, api.CodeUnauthenticated, "signature does not match"},
		{"tampered query", exchange{key: s.keys["amy"], method: "GET", target: "/v1/balance?node=chem.lab1",
			tamper: func(r *http.Request) { r.URL.RawQuery = "node=bio.lab1" }}, 401, api.CodeUnauthenticated, "signature does not match"},
		{"wrong secret", exchange{key: wrongSecret, method: "POST", target: "/v1/deposits", body: deposit, requestID: "t3"},
			401, api.CodeUnauthenticated, "signature does not match"},
		{"unknown key id", exchange{key: unknown, method: "POST", target: "/v1/deposits", body: deposit, requestID: "t4"},
			401, api.CodeUnauthenticated, "unknown or revoked key"},
		{"date outside the window", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: deposit, requestID: "t5",
			signedAt: s.Clock.Now().Add(-6 * time.Minute)}, 401, api.CodeUnauthenticated, "behind the server's clock"},
		{"revoked key", exchange{key: revokedKey, method: "POST", target: "/v1/deposits", body: deposit, requestID: "t6"},
			401, api.CodeUnauthenticated, "unknown or revoked key"},
		{"no signature", exchange{key: s.keys["root"], method: "GET", target: "/v1/balances",
			tamper: func(r *http.Request) { r.Header.Del("Authorization") }}, 401, api.CodeUnauthenticated, "missing or malformed Authorization"},
		{"user reads another project", exchange{key: s.keys["amy"], method: "GET", target: "/v1/balance?node=bio.lab1"},
			403, api.CodeForbidden, "client amy (user of amy) may not read bio.lab1: user amy is not a member"},
		{"user reads another project's availability", exchange{key: s.keys["amy"], method: "GET", target: "/v1/available?project=bio.lab1"},
			403, api.CodeForbidden, "may not read bio.lab1"},
		{"user deposits", exchange{key: s.keys["amy"], method: "POST", target: "/v1/deposits", body: deposit, requestID: "t7"},
			403, api.CodeForbidden, "client amy (role user) may not POST /v1/deposits; allowed roles: admin, manager"},
		{"user reads the audit", exchange{key: s.keys["amy"], method: "GET", target: "/v1/audit"},
			403, api.CodeForbidden, "may not GET /v1/audit"},
		{"manager deposits outside its subtree", exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/deposits",
			body: ledger.DepositSpec{Account: "bio", Amount: decimal.NewFromInt(1)}, requestID: "t8"},
			403, api.CodeForbidden, "client chemmgr (manager of chem) may not deposit into bio: outside the subtrees it manages"},
		{"manager transfers out of its subtree", exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/transfers",
			body: ledger.TransferSpec{From: "chem", To: "bio", Amount: decimal.NewFromInt(1)}, requestID: "t9"},
			403, api.CodeForbidden, "may not transfer to bio"},
		{"manager reads outside its subtree", exchange{key: s.keys["chemmgr"], method: "GET", target: "/v1/balance?node=bio"},
			403, api.CodeForbidden, "may not read bio"},
		{"scheduler transfers", exchange{key: s.keys["sched"], method: "POST", target: "/v1/transfers",
			body: ledger.TransferSpec{From: "chem", To: "bio", Amount: decimal.NewFromInt(1)}, requestID: "t10"},
			403, api.CodeForbidden, "client sched (role scheduler) may not POST /v1/transfers"},
		{"scheduler deposits", exchange{key: s.keys["sched"], method: "POST", target: "/v1/deposits", body: deposit, requestID: "t11"},
			403, api.CodeForbidden, "may not POST /v1/deposits"},
		{"scheduler places a lien on another machine", exchange{key: s.keys["sched"], method: "POST", target: "/v1/liens",
			body: placeSpec("hpc2", "j1"), requestID: "t12"},
			403, api.CodeForbidden, `client sched (scheduler of hpc1) may not place a lien on machine "hpc2": not one of its machines`},
		{"scheduler charges on another machine", exchange{key: s.keys["sched"], method: "POST", target: "/v1/charges",
			body: lien.ChargeSpec{Job: lien.Job{Machine: "hpc2", ID: "j1"}}, requestID: "t13"},
			403, api.CodeForbidden, `may not charge a job on machine "hpc2"`},
		{"malformed JSON", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: []byte(`{"account":`), requestID: "t14"},
			400, api.CodeBadJSON, "request body: unexpected EOF"},
		{"unknown field", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: []byte(`{"account":"chem","amount":"1","amunt":"2"}`), requestID: "t15"},
			400, api.CodeBadJSON, `unknown field "amunt"`},
		{"two JSON values", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: []byte(`{"account":"chem","amount":"1"} {}`), requestID: "t16"},
			400, api.CodeBadJSON, "more than one JSON value"},
		{"empty body", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", requestID: "t17"},
			400, api.CodeBadJSON, "empty"},
		{"oversized body", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: bytes.Repeat([]byte(" "), api.MaxBodyBytes+1), requestID: "t18"},
			413, api.CodeTooLarge, "larger than the limit of 1048576 bytes"},
		{"missing request id", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: deposit},
			400, api.CodeMissingRequestID, "needs a X-Ingot-Request-Id header"},
		{"unknown path", exchange{key: s.keys["root"], method: "GET", target: "/v1/nothing"},
			404, api.CodeUnknownEndpoint, "no endpoint /v1/nothing"},
		{"wrong method", exchange{key: s.keys["root"], method: "DELETE", target: "/v1/deposits"},
			405, api.CodeMethodNotAllowed, "DELETE /v1/deposits: method not allowed; use POST"},
		{"unknown query parameter", exchange{key: s.keys["root"], method: "GET", target: "/v1/balance?node=chem&when=now"},
			400, api.CodeInvalid, `unknown query parameter "when"; /v1/balance takes only node, at`},
		{"bad time", exchange{key: s.keys["root"], method: "GET", target: "/v1/balance?node=chem&at=now"},
			400, api.CodeInvalid, `query parameter at: "now" is not an RFC 3339 time`},
		{"no node", exchange{key: s.keys["root"], method: "GET", target: "/v1/balance"},
			400, api.CodeInvalid, "needs the query parameter node"},
		{"unknown node", exchange{key: s.keys["root"], method: "GET", target: "/v1/balance?node=physics"},
			404, api.CodeNotFound, "physics"},
		{"insufficient funds", exchange{key: s.keys["root"], method: "POST", target: "/v1/transfers",
			body: ledger.TransferSpec{From: "chem", To: "bio", Amount: decimal.NewFromInt(1000000)}, requestID: "t19"},
			409, api.CodeInsufficientFunds, "insufficient funds"},
		{"bad request id", exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: deposit, requestID: "has space"},
			400, api.CodeInvalid, "printable ASCII"},
	})
}

// refusal is a request the server must refuse with a status, a code and a
// message containing msg.
type refusal struct {
	name   string
	e      exchange
	status int
	code   api.Code
	msg    string
}

// wantRefusals sends each refusal in a subtest and checks it wrote nothing.
func (s *site) wantRefusals(t *testing.T, tests []refusal) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			journal := s.JournalLen()
			w := s.do(tt.e)
			wantError(t, w, tt.status, tt.code, tt.msg)
			if got := s.JournalLen(); got != journal {
				t.Errorf("journal grew from %d to %d", journal, got)
			}
		})
	}
}

// revokedKey is the key of a client whose only key was revoked.
func (s *site) revokedKey() auth.Key {
	s.t.Helper()
	s.addClient("gone", clients.RoleAdmin)
	key := s.keys["gone"]
	if _, err := s.reg.Revoke(context.Background(), s.Req(), "gone", key.ID); err != nil {
		s.t.Fatal(err)
	}
	return key
}

func TestReplayedNonce(t *testing.T) {
	s := newSite(t)
	r := s.request(exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits",
		body: ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}, requestID: "once"})
	body, _ := io.ReadAll(r.Body)
	replay := r.Clone(r.Context())
	r.Body, replay.Body = io.NopCloser(bytes.NewReader(body)), io.NopCloser(bytes.NewReader(body))
	if w := s.serve(r); w.Code != http.StatusOK {
		t.Fatalf("first request: %d %s", w.Code, w.Body)
	}
	journal := s.JournalLen()
	wantError(t, s.serve(replay), 401, api.CodeUnauthenticated, "nonce already used")
	if got := s.JournalLen(); got != journal {
		t.Errorf("journal grew from %d to %d on a replay", journal, got)
	}
}

// TestCapturedChangeReplayed: a change captured on the network is of no
// use to whoever captured it. Re-sent under another request id (in flight,
// or later) its signature fails; re-sent as it was after a restart (the
// nonces remembered are gone) it is a retry, answered with the first
// answer and applied once.
func TestCapturedChangeReplayed(t *testing.T) {
	s := newSite(t)
	captured := s.request(exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits",
		body: ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(5)}, requestID: "dep-1"})
	body, _ := io.ReadAll(captured.Body)
	resend := func(requestID string) *http.Request {
		r := captured.Clone(captured.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Header.Set(api.HeaderRequestID, requestID)
		return r
	}
	first := s.serve(resend("dep-1"))
	if first.Code != http.StatusOK {
		t.Fatalf("the change: %d %s", first.Code, first.Body)
	}
	journal := s.JournalLen()
	refused := func(when string, r *http.Request, msg string) {
		t.Helper()
		w := s.serve(r)
		wantError(t, w, 401, api.CodeUnauthenticated, msg)
		if got := s.JournalLen(); got != journal {
			t.Errorf("%s: the journal grew from %d to %d", when, journal, got)
		}
	}
	refused("request id changed in flight", resend("dep-2"), "signature does not match")
	// A restart: a server of the same bank with its nonce memory empty.
	v := &auth.Verifier{Lookup: server.KeyLookup(s.reg), Now: s.Clock.Now}
	s.srv = server.New(s.Ledger, lien.New(s.Ledger), s.reg, v, slog.New(slog.NewJSONHandler(s.log, nil)))
	refused("replayed under a new request id after a restart", resend("dep-3"), "signature does not match")
	again := s.serve(resend("dep-1"))
	if again.Code != http.StatusOK || again.Body.String() != first.Body.String() {
		t.Errorf("replayed as it was after a restart: %d %s, want the first answer %s", again.Code, again.Body, first.Body)
	}
	if got := s.JournalLen(); got != journal {
		t.Errorf("the replay was applied again: the journal grew from %d to %d", journal, got)
	}
}

// TestStrictBodies: a body whose reader and the bank could see different
// things is refused, each with its code, and nothing is written.
func TestStrictBodies(t *testing.T) {
	s := newSite(t)
	deposit := func(name, body string, code api.Code, msg string) refusal {
		return refusal{name, exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: []byte(body), requestID: "strict-" + strings.ReplaceAll(name, " ", "-")},
			400, code, msg}
	}
	s.wantRefusals(t, []refusal{
		deposit("duplicate key", `{"account":"chem","amount":"1","amount":"1000"}`, api.CodeDuplicateKey, `key "amount" appears twice`),
		deposit("key in another case", `{"account":"chem","amount":"1","Amount":"1000"}`, api.CodeKeySpelling, `key "Amount" in the body: the wire format spells it "amount"`),
		deposit("invalid UTF-8", "{\"account\":\"chem\",\"amount\":\"1\",\"description\":\"grant \xff\"}", api.CodeInvalidUTF8, "not valid UTF-8"),
		deposit("escape in a description", `{"account":"chem","amount":"1","description":"ok\u001b[2K\rforged line"}`, api.CodeControlCharacter, "description holds the control character U+001B"),
		deposit("newline in a description", `{"account":"chem","amount":"1","description":"a\nb"}`, api.CodeControlCharacter, "U+000A"),
	})
}

func TestAccessLog(t *testing.T) {
	s := newSite(t)
	var r ledger.Receipt
	s.ok(exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/deposits",
		body: ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(7), Description: "secret-grant"}, requestID: "log-1"}, &r)
	line := strings.TrimSpace(s.log.String())
	var entry map[string]any
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		t.Fatalf("log %q is not one JSON line: %v", line, err)
	}
	for k, want := range map[string]any{"method": "POST", "path": "/v1/deposits", "status": 200.0, "client": "chemmgr", "request_id": "log-1"} {
		if entry[k] != want {
			t.Errorf("log %s = %v, want %v", k, entry[k], want)
		}
	}
	if _, ok := entry["duration_ms"]; !ok {
		t.Error("log has no duration")
	}
	key := s.keys["chemmgr"]
	for _, leak := range []string{"secret-grant", string(key.KeyFile()[len(key.ID)+1:][:20]), "Signature"} {
		if strings.Contains(line, leak) {
			t.Errorf("log %q shows %q", line, leak)
		}
	}
}

// TestObserver checks what the observer is told of each request: its
// endpoint ("" for a path that is none), its method as sent and the status
// answered, refusals included.
func TestObserver(t *testing.T) {
	type observed struct {
		endpoint, method string
		status           int
	}
	var got []observed
	s := newSite(t, server.WithObserver(func(endpoint, method string, status int, d time.Duration) {
		if d < 0 {
			t.Errorf("%s %s took %v", method, endpoint, d)
		}
		got = append(got, observed{endpoint, method, status})
	}))
	s.serve(httptest.NewRequest("GET", "/healthz", nil))
	s.do(exchange{key: s.keys["amy"], method: "GET", target: "/v1/made-up"})
	s.do(exchange{key: s.keys["amy"], method: "POST", target: "/v1/deposits", requestID: "obs-1",
		body: ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}})
	want := []observed{{"/healthz", "GET", 200}, {"", "GET", 404}, {"/v1/deposits", "POST", 403}}
	if !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

func TestEndpoint(t *testing.T) {
	s := newSite(t)
	for _, tc := range []struct{ name, method, target, want string }{
		{"route", "POST", "/v1/liens", "/v1/liens"},
		{"route with query", "GET", "/v1/balance?node=chem", "/v1/balance"},
		{"route, other method", "DELETE", "/v1/liens", "/v1/liens"},
		{"health", "GET", "/healthz", "/healthz"},
		{"unknown path", "GET", "/v1/liens/42", ""},
		{"made-up path", "GET", "/x/secret-client-name", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.srv.Endpoint(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
				t.Errorf("Endpoint(%s %s) = %q, want %q", tc.method, tc.target, got, tc.want)
			}
		})
	}
}

// TestSchedulerAnswersAreTheLedgers: the lien and charge endpoints send
// the JSON the ledger made for the idempotency record instead of encoding
// the result again; this checks that what they send is byte for byte what
// encoding the result gives (as every other endpoint sends), and that a
// retry gets the same bytes. (It cannot tell which of the two encodings was
// sent, which is the point: they must not differ.)
func TestSchedulerAnswersAreTheLedgers(t *testing.T) {
	s := newSite(t)
	sched := s.keys["sched"]
	usage := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 30, WallclockLimitSeconds: 60, State: charge.Completed}
	for _, tc := range []struct {
		e      exchange
		result any
	}{
		{exchange{key: sched, method: "POST", target: "/v1/liens", body: placeSpec("hpc1", "job9"), requestID: "place-job9"}, &lien.LienResult{}},
		{exchange{key: sched, method: "POST", target: "/v1/charges", requestID: "charge-job9",
			body: lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: "job9"}, Usage: usage}}, &lien.ChargeResult{}},
	} {
		first := s.do(tc.e)
		if first.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.e.target, first.Code, first.Body)
		}
		if err := json.Unmarshal(first.Body.Bytes(), tc.result); err != nil {
			t.Fatal(err)
		}
		var encoded bytes.Buffer
		if err := json.NewEncoder(&encoded).Encode(tc.result); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Body.Bytes(), encoded.Bytes()) {
			t.Errorf("%s answered\n%s\nencoding its result gives\n%s", tc.e.target, first.Body, encoded.Bytes())
		}
		s.Clock.Advance(time.Second)
		if retry := s.do(tc.e); !bytes.Equal(retry.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("%s retried answered\n%s\nfirst\n%s", tc.e.target, retry.Body, first.Body)
		}
	}
}

// TestForecastFollowsReach: GET /v1/forecast answers every node to an
// admin, a manager's subtree and a user's projects only, and refuses a
// node the client does not read, as /v1/balance does.
func TestForecastFollowsReach(t *testing.T) {
	s := newSite(t)
	for _, c := range []struct {
		client, target string
		want           []string
	}{
		{"root", "/v1/forecast", []string{"bio", "bio.lab1", "chem", "chem.lab1"}},
		{"chemmgr", "/v1/forecast", []string{"chem", "chem.lab1"}},
		{"amy", "/v1/forecast", []string{"chem.lab1"}},
		{"amy", "/v1/forecast?node=chem.lab1", []string{"chem.lab1"}},
	} {
		var fs api.List[forecast.Forecast]
		s.ok(exchange{key: s.keys[c.client], method: "GET", target: c.target}, &fs)
		var got []string
		for _, f := range fs.Items {
			got = append(got, f.Node)
			wantAmount(t, f.Node+" available", f.Available, "1000")
			if r := f.Rate(forecast.LongWindow); r.RunsOut != nil || !r.Charged.IsZero() {
				t.Errorf("%s without use: %+v", f.Node, r)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %v, want %v", c.client, c.target, got, c.want)
		}
	}
	wantError(t, s.do(exchange{key: s.keys["amy"], method: "GET", target: "/v1/forecast?node=bio"}), 403, api.CodeForbidden, "may not read bio")
	wantError(t, s.do(exchange{key: s.keys["chemmgr"], method: "GET", target: "/v1/forecast?node=bio.lab1"}), 403, api.CodeForbidden, "may not read bio.lab1")
	wantError(t, s.do(exchange{key: s.keys["root"], method: "GET", target: "/v1/forecast?node=physics"}), 404, api.CodeNotFound, "physics")
}

// TestSchedulesFollowReach: a manager schedules allocations of its
// account only; a user sees the schedules and periods of its projects'
// accounts, not others', and makes none.
func TestSchedulesFollowReach(t *testing.T) {
	s := newSite(t)
	spec := func(account string) schedule.Spec {
		return schedule.Spec{Account: account, Amount: decimal.NewFromInt(100), Every: schedule.Quarter, Start: s.Clock.Now().AddDate(0, 1, 0), Count: 4}
	}
	var sc schedule.Schedule
	s.ok(exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/schedules", body: spec("chem"), requestID: "s1"}, &sc)
	s.ok(exchange{key: s.keys["root"], method: "POST", target: "/v1/schedules", body: spec("bio"), requestID: "s2"}, &sc)
	wantError(t, s.do(exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/schedules", body: spec("bio"), requestID: "s3"}), 403, api.CodeForbidden, "bio")
	wantError(t, s.do(exchange{key: s.keys["chemmgr"], method: "POST", target: "/v1/schedules/cancel", body: api.ScheduleCancelRequest{Schedule: 2}, requestID: "s4"}), 403, api.CodeForbidden, "bio")
	wantError(t, s.do(exchange{key: s.keys["amy"], method: "POST", target: "/v1/schedules", body: spec("chem"), requestID: "s5"}), 403, api.CodeForbidden, "may not POST /v1/schedules")
	var list api.List[schedule.Schedule]
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: "/v1/schedules"}, &list)
	if len(list.Items) != 1 || list.Items[0].Account != "chem" {
		t.Errorf("amy's schedules: %+v", list.Items)
	}
	var periods api.List[schedule.Period]
	until := s.Clock.Now().AddDate(2, 0, 0).Format(time.RFC3339)
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: "/v1/schedules/upcoming?until=" + until}, &periods)
	if len(periods.Items) != 4 || periods.Items[0].Account != "chem" {
		t.Errorf("amy's upcoming periods: %+v", periods.Items)
	}
	wantError(t, s.do(exchange{key: s.keys["amy"], method: "GET", target: "/v1/schedules/upcoming?account=bio&until=" + until}), 403, api.CodeForbidden, "bio")
}
