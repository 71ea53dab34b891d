package server_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/munge"
	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
	"github.com/ingot-hpc/ingot/proto/server"
)

// Local accounts of Debian the tests use besides root and nobody: daemon
// (uid 1) is no bank user, bin (uid 2) an inactive one; uid 4242 has no
// account.
const (
	daemonUID    = 1
	binUID       = 2
	noAccountUID = 4242
)

// newLocalSite is a site whose server accepts MUNGE credentials from its
// own munged, with bank users nobody (a member of chem.lab1, like amy) and
// bin (inactive).
func newLocalSite(t *testing.T) (*site, *mungetest.Daemon) {
	t.Helper()
	d := mungetest.Start(t)
	s := newSite(t, server.WithMunge(&munge.Verifier{Command: d.Command()}))
	s.addUser("nobody", "chem.lab1")
	s.addUser("bin", "chem.lab1")
	if _, err := s.ModifyUser(context.Background(), s.Req(), "bin", ledger.UserChange{Active: new(false)}); err != nil {
		t.Fatal(err)
	}
	return s, d
}

func (s *site) addUser(name, project string) {
	s.t.Helper()
	spec := ledger.UserSpec{Name: name, Memberships: []ledger.Membership{{Node: project, Role: ledger.RoleMember}}}
	if _, err := s.AddUser(context.Background(), s.Req(), spec); err != nil {
		s.t.Fatal(err)
	}
}

// munged is a request with a credential of uid.
func munged(t *testing.T, d *mungetest.Daemon, uid int, method, target, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	d.Sign(t, uid, r, []byte(body))
	return r
}

// TestMungeUser: nobody's credential acts as bank user nobody, who reads
// their project.
func TestMungeUser(t *testing.T) {
	s, d := newLocalSite(t)
	w := s.serve(munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=chem.lab1", ""))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"node":"chem.lab1"`) {
		t.Fatalf("nobody reads chem.lab1: %d %s", w.Code, w.Body)
	}
	w = s.serve(munged(t, d, mungetest.Nobody, "GET", "/v1/available?project=chem.lab1", ""))
	if w.Code != http.StatusOK {
		t.Fatalf("nobody reads chem.lab1's availability: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(s.log.String(), `"client":"munge:nobody"`) {
		t.Errorf("the access log does not name munge:nobody:\n%s", s.log)
	}
}

// TestMungeRootIsNoAdmin: a credential of uid 0 is the bank user root, an
// ordinary user.
func TestMungeRootIsNoAdmin(t *testing.T) {
	s, d := newLocalSite(t)
	s.addUser("root", "chem.lab1")
	if w := s.serve(munged(t, d, 0, "GET", "/v1/balance?node=chem.lab1", "")); w.Code != http.StatusOK {
		t.Fatalf("root reads chem.lab1: %d %s", w.Code, w.Body)
	}
	wantError(t, s.serve(munged(t, d, 0, "GET", "/v1/audit", "")), 403, api.CodeForbidden,
		"client munge:root (role user) may not GET /v1/audit")
}

// TestMungeRefusals: every refusal of a MUNGE request is clear and writes
// nothing.
func TestMungeRefusals(t *testing.T) {
	s, d := newLocalSite(t)
	deposit := `{"account":"chem","amount":"1"}`
	tests := []struct {
		name    string
		request func(t *testing.T) *http.Request
		status  int
		code    api.Code
		msg     string
	}{
		{"reads another project", func(t *testing.T) *http.Request {
			return munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=bio.lab1", "")
		}, 403, api.CodeForbidden, "client munge:nobody (user of nobody) may not read bio.lab1: user nobody is not a member or manager of it"},
		{"deposits", func(t *testing.T) *http.Request {
			r := munged(t, d, mungetest.Nobody, "POST", "/v1/deposits", deposit)
			r.Header.Set(api.HeaderRequestID, "m1")
			return r
		}, 403, api.CodeForbidden, "client munge:nobody (role user) may not POST /v1/deposits"},
		{"replayed", func(t *testing.T) *http.Request {
			r := munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=chem.lab1", "")
			if w := s.serve(r.Clone(r.Context())); w.Code != http.StatusOK {
				t.Fatalf("first use: %d %s", w.Code, w.Body)
			}
			return r
		}, 401, api.CodeUnauthenticated, "munge: credential refused: Replayed credential"},
		{"on another path", func(t *testing.T) *http.Request {
			r := munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=chem.lab1", "")
			r.URL.Path = "/v1/available"
			return r
		}, 401, api.CodeUnauthenticated, `credential does not match the request: it was made for the path "/v1/balance"; this request's is "/v1/available"`},
		{"with another query", func(t *testing.T) *http.Request {
			r := munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=chem.lab1", "")
			r.URL.RawQuery = "node=bio.lab1"
			return r
		}, 401, api.CodeUnauthenticated, `it was made for the query "node=chem.lab1"`},
		{"with another body", func(t *testing.T) *http.Request {
			r := munged(t, d, 0, "POST", "/v1/deposits", deposit)
			r.Header.Set(api.HeaderRequestID, "m2")
			r.Body = io.NopCloser(strings.NewReader(`{"account":"chem","amount":"1000"}`))
			return r
		}, 401, api.CodeUnauthenticated, "it was made for the body's SHA-256"},
		{"date outside the window", func(t *testing.T) *http.Request {
			r := munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=chem.lab1", "")
			r.Header.Set(auth.HeaderDate, "2020-01-01T00:00:00Z")
			return r
		}, 401, api.CodeUnauthenticated, "behind the server's clock"},
		{"uid without an account", func(t *testing.T) *http.Request {
			return munged(t, d, noAccountUID, "GET", "/v1/balance?node=chem.lab1", "")
		}, 401, api.CodeUnauthenticated, "MUNGE credential of uid 4242: no local account on the server has that uid"},
		{"local user who is no bank user", func(t *testing.T) *http.Request {
			return munged(t, d, daemonUID, "GET", "/v1/balance?node=chem.lab1", "")
		}, 401, api.CodeUnauthenticated, "MUNGE credential of local user daemon (uid 1): daemon is not a bank user"},
		{"root, who is no bank user", func(t *testing.T) *http.Request {
			return munged(t, d, 0, "GET", "/v1/balances", "")
		}, 401, api.CodeUnauthenticated, "MUNGE credential of local user root (uid 0): root is not a bank user"},
		{"inactive bank user", func(t *testing.T) *http.Request {
			return munged(t, d, binUID, "GET", "/v1/balance?node=chem.lab1", "")
		}, 401, api.CodeUnauthenticated, "local user bin (uid 2): bank user bin is inactive"},
		{"malformed credential", func(t *testing.T) *http.Request {
			r := munged(t, d, mungetest.Nobody, "GET", "/v1/balance?node=chem.lab1", "")
			r.Header.Set("Authorization", "MUNGE not-a-credential")
			return r
		}, 401, api.CodeUnauthenticated, "malformed MUNGE Authorization header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.request(t)
			journal := s.JournalLen()
			wantError(t, s.serve(r), tt.status, tt.code, tt.msg)
			if got := s.JournalLen(); got != journal {
				t.Errorf("journal grew from %d to %d", journal, got)
			}
		})
	}
}

// TestMungeDisabled: a server without WithMunge refuses credentials.
func TestMungeDisabled(t *testing.T) {
	d := mungetest.Start(t)
	s := newSite(t)
	wantError(t, s.serve(munged(t, d, 0, "GET", "/v1/balances", "")), 401, api.CodeUnauthenticated,
		"this server does not accept MUNGE credentials")
}

// socket serves the site's API on a Unix socket that every local user may
// dial, as ingot serve --socket does, and returns its path.
func (s *site) socket() string {
	s.t.Helper()
	path := filepath.Join(mungetest.PublicDir(s.t), "ingot.socket")
	ln, err := net.Listen("unix", path)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		s.t.Fatal(err)
	}
	srv := &http.Server{Handler: s.srv, ConnContext: server.ConnContext}
	go srv.Serve(ln)
	s.t.Cleanup(func() { srv.Close() })
	return path
}

// overSocket sends r (its method, target, headers and body) on the socket
// with curl run as uid, and returns the answer.
func overSocket(t *testing.T, socket string, uid int, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	mungetest.Require(t, "curl")
	var body bytes.Buffer
	body.ReadFrom(r.Body)
	args := []string{"-sS", "--unix-socket", socket, "-X", r.Method, "-w", "\n%{http_code}", "--data-binary", "@-"}
	if body.Len() == 0 {
		args = args[:len(args)-2]
	}
	for name, values := range r.Header {
		for _, v := range values {
			args = append(args, "-H", name+": "+v)
		}
	}
	out, err := mungetest.RunAs(t, uid, body.Bytes(), "curl", append(args, "http://localhost"+r.URL.RequestURI())...)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(out, '\n')
	answer, status := out[:max(i, 0)], out[i+1:]
	w := httptest.NewRecorder()
	w.Body = bytes.NewBuffer(answer)
	if w.Code, err = strconv.Atoi(string(status)); err != nil {
		t.Fatalf("curl printed %q", out)
	}
	return w
}

// TestSocketAdmin: on the socket, root (the server's uid here) is admin
// without a key, and may change the bank.
func TestSocketAdmin(t *testing.T) {
	s, _ := newLocalSite(t)
	socket := s.socket()
	if w := overSocket(t, socket, 0, httptest.NewRequest("GET", "/v1/balances", nil)); w.Code != http.StatusOK {
		t.Fatalf("root reads every balance: %d %s", w.Code, w.Body)
	}
	r := httptest.NewRequest("POST", "/v1/deposits", strings.NewReader(`{"account":"chem","amount":"5"}`))
	r.Header.Set(api.HeaderRequestID, "socket-1")
	if w := overSocket(t, socket, 0, r); w.Code != http.StatusOK {
		t.Fatalf("root deposits: %d %s", w.Code, w.Body)
	}
	wantAmount(t, "chem after root's deposit", s.balance("chem").Amount, "1005")
	entries, err := s.Journal(context.Background(), ledger.JournalFilter{Node: "chem"})
	if err != nil {
		t.Fatal(err)
	}
	if last := entries[len(entries)-1]; last.Actor != "client:socket:root" {
		t.Errorf("the deposit's actor is %q, want client:socket:root", last.Actor)
	}
}

// TestSocketPeers: on the socket, other uids act as their bank users, and
// a request with an Authorization header is checked as any other.
func TestSocketPeers(t *testing.T) {
	s, d := newLocalSite(t)
	socket := s.socket()
	w := overSocket(t, socket, mungetest.Nobody, httptest.NewRequest("GET", "/v1/balance?node=chem.lab1", nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"node":"chem.lab1"`) {
		t.Fatalf("nobody reads chem.lab1 on the socket: %d %s", w.Code, w.Body)
	}

	deposit := `{"account":"chem","amount":"1"}`
	badSignature := s.request(exchange{key: s.keys["root"], method: "POST", target: "/v1/deposits", body: []byte(deposit), requestID: "s1"})
	badSignature.Header.Set(auth.HeaderNonce, strings.Repeat("0", 32))
	tests := []struct {
		name   string
		uid    int
		r      *http.Request
		status int
		code   api.Code
		msg    string
	}{
		{"nobody reads another project", mungetest.Nobody, httptest.NewRequest("GET", "/v1/balance?node=bio.lab1", nil),
			403, api.CodeForbidden, "client socket:nobody (user of nobody) may not read bio.lab1"},
		{"nobody audits the bank", mungetest.Nobody, httptest.NewRequest("GET", "/v1/audit", nil),
			403, api.CodeForbidden, "client socket:nobody (role user) may not GET /v1/audit"},
		{"uid without an account", noAccountUID, httptest.NewRequest("GET", "/v1/balance?node=chem.lab1", nil),
			401, api.CodeUnauthenticated, "socket peer of uid 4242: no local account on the server has that uid"},
		{"local user who is no bank user", daemonUID, httptest.NewRequest("GET", "/v1/balance?node=chem.lab1", nil),
			401, api.CodeUnauthenticated, "socket peer of local user daemon (uid 1): daemon is not a bank user"},
		{"inactive bank user", binUID, httptest.NewRequest("GET", "/v1/balance?node=chem.lab1", nil),
			401, api.CodeUnauthenticated, "bank user bin is inactive"},
		// root's connection, but amy's key: amy's rights, not root's.
		{"a key on root's connection", 0, s.request(exchange{key: s.keys["amy"], method: "GET", target: "/v1/balance?node=bio.lab1"}),
			403, api.CodeForbidden, "client amy (user of amy) may not read bio.lab1"},
		{"a bad signature on root's connection", 0, badSignature,
			401, api.CodeUnauthenticated, "signature does not match"},
		{"nobody's credential on root's connection", 0, munged(t, d, mungetest.Nobody, "GET", "/v1/audit", ""),
			403, api.CodeForbidden, "client munge:nobody (role user) may not GET /v1/audit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			journal := s.JournalLen()
			wantError(t, overSocket(t, socket, tt.uid, tt.r), tt.status, tt.code, tt.msg)
			if got := s.JournalLen(); got != journal {
				t.Errorf("journal grew from %d to %d", journal, got)
			}
		})
	}
	wantAmount(t, "chem", s.balance("chem").Amount, "1000")
}
