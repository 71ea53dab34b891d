package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// mutating are the endpoints whose bodies the server decodes.
var mutating = []string{"/v1/deposits", "/v1/transfers", "/v1/quotes", "/v1/liens", "/v1/liens/release", "/v1/charges",
	"/v1/withdrawals", "/v1/nodes", "/v1/nodes/modify", "/v1/nodes/deactivate", "/v1/nodes/reactivate", "/v1/users", "/v1/users/modify",
	"/v1/machines", "/v1/machines/modify", "/v1/rates", "/v1/config", "/v1/quotes/guarantee", "/v1/liens/extend",
	"/v1/liens/sweep", "/v1/refunds", "/v1/reservations", "/v1/reservations/flush", "/v1/clients", "/v1/clients/rotate",
	"/v1/clients/revoke", "/v1/batch", "/v1/refunds/job", "/v1/peers", "/v1/peers/modify", "/v1/peers/key", "/v1/peers/remove",
	"/v1/peers/deposits", "/v1/contacts"}

// exchanged are the endpoints a peer bank posts its transactions to.
var exchanged = []string{api.PathExchangeDeposits, api.PathExchangeUsage, api.PathExchangeLiens, api.PathExchangeCharges,
	api.PathExchangeReleases, api.PathExchangeRefunds, api.PathExchangeWithdrawals}

// reading are the endpoints whose queries the server decodes.
var reading = []string{"/v1/settings", "/v1/balances", "/v1/balance", "/v1/available", "/v1/shares", "/v1/fairshare",
	"/v1/statement", "/v1/journal", "/v1/audit", "/v1/nodes", "/v1/node", "/v1/users", "/v1/machines", "/v1/rates",
	"/v1/config", "/v1/quotes", "/v1/liens", "/v1/lien", "/v1/charges", "/v1/reservations", "/v1/clients", "/v1/preempt"}

// wantListedAnswer checks that an answer is a JSON object and, if a
// refusal, one with a code listed for its status and not a server error.
func wantListedAnswer(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var answer map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
		t.Fatalf("status %d, body not a JSON object: %v\n%s", w.Code, err, w.Body.String())
	}
	if w.Code == http.StatusOK {
		return
	}
	code, _ := answer["code"].(string)
	if api.Code(code).Status() != w.Code {
		t.Fatalf("status %d with code %q, which is not listed for it:\n%s", w.Code, code, w.Body.String())
	}
	if w.Code >= 500 {
		t.Fatalf("a request made the server fail: %s", w.Body.String())
	}
}

// FuzzRequestBodies sends arbitrary bodies, signed by the admin, to every
// endpoint that decodes one: the server must answer JSON (an error with a
// listed code, or a result), never panic, and leave a bank that passes the
// audit (the test bank audits itself at cleanup).
func FuzzRequestBodies(f *testing.F) {
	f.Add(uint8(0), []byte(`{"account":"chem","amount":"10"}`))
	f.Add(uint8(1), []byte(`{"from":"chem","to":"bio","amount":"1e400"}`))
	f.Add(uint8(3), []byte(`{"machine":"hpc1","job_id":"1","user":"amy","request":{"processors":-1,"wallclock_limit_seconds":60}}`))
	f.Add(uint8(5), []byte(`{"machine":"hpc1","job_id":"1","user":"amy","usage":{"processors":1,"wallclock_seconds":9223372036854775807,"state":"completed"}}`))
	f.Add(uint8(2), []byte(`[`))
	f.Add(uint8(4), []byte(`{"machine":"hpc1","job_id":"\u0000"}`))
	f.Add(uint8(6), []byte(`{"account":"chem","amount":"-1"}`))
	f.Add(uint8(7), []byte(`{"name":"chem.lab1.x","policy":{"quota_kind":"dynamic","quota":"2"}}`))
	f.Add(uint8(8), []byte(`{"name":"chem.lab1","change":{"policy":{"limit":"-5"}}}`))
	f.Add(uint8(9), []byte(`{"name":"chem"}`))
	f.Add(uint8(10), []byte(`{"name":"carl","memberships":[{"node":"nope","role":"owner"}]}`))
	f.Add(uint8(11), []byte(`{"name":"amy","change":{"remove":["chem.lab1"],"active":false}}`))
	f.Add(uint8(12), []byte(`{"name":"hpc3","shape":{"cores":-1}}`))
	f.Add(uint8(13), []byte(`{"name":"hpc1","change":{"gpus":9223372036854775807}}`))
	f.Add(uint8(14), []byte(`{"rates":[{"type":"VBR","name":"Processors","rate":"1e9"}],"time_of_day":[{"name":"n","start":"25:00","end":"06:00","multiplier":"0.5"}]}`))
	f.Add(uint8(15), []byte(`{"scope":{"machine":"hpc1","project":"chem"},"grace":-1}`))
	f.Add(uint8(16), []byte(`{"machine":"hpc1","user":"amy","request":{"processors":1,"wallclock_limit_seconds":60},"expires":"1999-01-01T00:00:00Z","uses":0}`))
	f.Add(uint8(17), []byte(`{"machine":"hpc1","job_id":"1","wallclock_limit_seconds":-60}`))
	f.Add(uint8(18), []byte(`{}`))
	f.Add(uint8(19), []byte(`{"charge":1,"amount":"0.001"}`))
	f.Add(uint8(20), []byte(`{"name":"r","machine":"hpc1","processors":1,"start":"2030-01-01T00:00:00Z","end":"2029-01-01T00:00:00Z","user":"amy"}`))
	f.Add(uint8(21), []byte(`{"name":"r","running_proc_seconds":-1,"end":true}`))
	f.Add(uint8(22), []byte(`{"name":"x","role":"manager","scope":["nope"]}`))
	f.Add(uint8(23), []byte(`{"name":"nobody"}`))
	f.Add(uint8(24), []byte(`{"name":"root","key_id":"root.00000000"}`))
	f.Add(uint8(25), []byte(`{"items":[{"lien":{"machine":"hpc1","job_id":"1","user":"amy","request":{"processors":1,"wallclock_limit_seconds":60}}},{"charge":{"machine":"hpc1","job_id":"1","usage":{"processors":1,"wallclock_seconds":30,"state":"completed"}}},{"release":{"machine":"hpc1","job_id":"1"}}]}`))
	f.Add(uint8(25), []byte(`{"items":[{},{"lien":null,"release":{"machine":"hpc2","job_id":"x"},"charge":{"machine":"hpc2","job_id":"x"}},{"release":{"machine":"","job_id":""}}]}`))
	f.Add(uint8(25), []byte(`{"items":null}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		s := newSite(t)
		wantListedAnswer(t, s.do(exchange{key: s.keys["root"], method: http.MethodPost, target: mutating[int(which)%len(mutating)], body: body, requestID: "fuzz"}))
	})
}

// FuzzExchangeBodies sends arbitrary bodies, signed by a peer whose
// agreement names chem.lab1, to every endpoint of the exchange, each twice
// under the same transaction id: the server must answer JSON (a result,
// or an error with a listed code), never panic, answer the second sending
// as the first, and leave a bank that passes the audit (at cleanup).
func FuzzExchangeBodies(f *testing.F) {
	digest := strings.Repeat("ab", 32)
	f.Add(uint8(0), []byte(`{"account":"chem","amount":"10"}`))
	f.Add(uint8(1), []byte(`{"period":"2026-11-28","from":"2026-11-28T00:00:00Z","to":"2026-11-29T00:00:00Z","lines":[{"account":"chem","allocation":1,"grant":"tx-1","charges":1,"charged":"5","refunded":"0","net":"5"}]}`))
	f.Add(uint8(2), []byte(`{"project":"chem.lab1","machine":"hpc1","job_id":"42","amount":"1.5","expires":"2099-11-28T10:00:00Z"}`))
	f.Add(uint8(2), []byte(`{"project":"chem.lab1","machine":"hpc1","job_id":"42","amount":"1","expires":"2099-11-28T10:00:00Z","withdraws":[{"id":"tx-0","digest":"`+digest+`"}]}`))
	f.Add(uint8(2), []byte(`{"project":"bio.lab1","machine":"hpc1","job_id":"42","amount":"1","expires":"2099-11-28T10:00:00Z"}`))
	f.Add(uint8(3), []byte(`{"project":"chem.lab1","machine":"hpc1","job_id":"42","amount":"7","final":true}`))
	f.Add(uint8(4), []byte(`{"project":"chem.lab1","machine":"hpc1","job_id":"42","amount":"0"}`))
	f.Add(uint8(5), []byte(`{"project":"chem.lab1","machine":"hpc1","job_id":"42","amount":"1e400","description":"x"}`))
	f.Add(uint8(6), []byte(`{"id":"tx-1","digest":"`+digest+`","lien":{"project":"chem.lab1","machine":"hpc1","job_id":"42","amount":"1","expires":"2099-11-28T10:00:00Z"}}`))
	f.Add(uint8(6), []byte(`[`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		s := newSite(t)
		_, key, err := s.srv.Peers().Add(context.Background(), s.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:1", Projects: []string{"chem", "chem.lab1"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		e := exchange{key: key, method: http.MethodPost, target: exchanged[int(which)%len(exchanged)], body: body, requestID: "tx-fuzz"}
		first := s.do(e)
		wantListedAnswer(t, first)
		if again := s.do(e); again.Code != first.Code {
			t.Fatalf("sent again: status %d, first %d:\n%s\n%s", again.Code, first.Code, again.Body, first.Body)
		}
	})
}

// FuzzQueries sends arbitrary queries, signed by a user client (whose reads
// are filtered) or the admin, to every endpoint that reads one: the server
// answers JSON (a result, or an error with a listed code) and writes
// nothing.
func FuzzQueries(f *testing.F) {
	f.Add(uint8(1), false, "at=2026-11-22T05:00:00Z")
	f.Add(uint8(2), true, "node=chem.lab1&at=now")
	f.Add(uint8(5), false, "account=chem&half_life=-1h&compensation=NaN")
	f.Add(uint8(6), true, "account=chem&from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z&summarize=yes")
	f.Add(uint8(7), true, "node=chem.lab1&kind=deposit&kind=nope&limit=-3")
	f.Add(uint8(7), false, "since=2026-01-01T00:00:00Z&until=2025-01-01T00:00:00Z&limit=99999999999999999999")
	f.Add(uint8(10), false, "name=&name=chem")
	f.Add(uint8(16), true, "node=bio&all=true")
	f.Add(uint8(17), false, "machine=hpc1&job_id=%00")
	f.Add(uint8(21), true, "project=chem.lab1&amount=12.5&machine=hpc1")
	f.Add(uint8(21), false, "project=chem&amount=1e9")
	f.Add(uint8(0), false, "x=1")
	f.Fuzz(func(t *testing.T, which uint8, asUser bool, query string) {
		s := newSite(t)
		key := s.keys["root"]
		if asUser {
			key = s.keys["amy"]
		}
		journal := s.JournalLen()
		e := exchange{key: key, method: http.MethodGet, target: reading[int(which)%len(reading)]}
		r := s.request(e)
		r.URL.RawQuery = query
		if err := auth.Sign(r, nil, key, s.Clock.Now()); err != nil {
			return // a query the signer refuses (a ';', too many parameters) is never sent
		}
		wantListedAnswer(t, s.serve(r))
		if got := s.JournalLen(); got != journal {
			t.Fatalf("a GET wrote %d journal entries", got-journal)
		}
	})
}
