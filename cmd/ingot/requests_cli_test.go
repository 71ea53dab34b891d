package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
)

// countedSite is a bank of precision 3 (so that a default of 2 shows),
// served in-process with every request's path recorded; quiet strips the
// precision from the answers, as a server of an ingot before
// api.HeaderPrecision answered.
type countedSite struct {
	*cliBank
	mu    sync.Mutex
	paths []string
	quiet bool
}

func newCountedSite(t *testing.T) *countedSite {
	file := onFile(t, filepath.Join(t.TempDir(), "bank.db"))
	file.ok("init", "--precision", "3")
	key := filepath.Join(t.TempDir(), "root.key")
	file.ok("client", "add", "root", "--role", "admin", "--key-out", key)
	file.ok("account", "create", "chem")
	file.ok("deposit", "chem", "1000")

	s := &countedSite{}
	ts := serveFile(t, file.db, func(srv http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.paths = append(s.paths, r.URL.Path)
			quiet := s.quiet
			s.mu.Unlock()
			if quiet {
				w = quietWriter{w}
			}
			srv.ServeHTTP(w, r)
		})
	})
	s.cliBank = &cliBank{t: t, global: []string{"--server", ts.URL, "--key-file", key}}
	return s
}

// quietWriter drops api.HeaderPrecision from an answer.
type quietWriter struct{ http.ResponseWriter }

func (q quietWriter) WriteHeader(code int) {
	q.Header().Del(api.HeaderPrecision)
	q.ResponseWriter.WriteHeader(code)
}

func (q quietWriter) Write(b []byte) (int, error) {
	q.Header().Del(api.HeaderPrecision)
	return q.ResponseWriter.Write(b)
}

// requests runs a command and returns the paths of the requests it made.
func (s *countedSite) requests(args ...string) (string, []string) {
	s.t.Helper()
	s.mu.Lock()
	s.paths = nil
	s.mu.Unlock()
	out := s.ok(args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	return out, slices.Clone(s.paths)
}

// TestRemoteCommandIsOneRequest checks that a command through a server
// makes the one request it needs, with its amounts printed at the bank's
// precision, which the answer carries: every command asked GET /v1/settings
// first, two requests where one does. Only a command that needs the
// bank's clock or creation time (a statement's default period), or the
// precision of an amount it reads before its request (a deposit), asks for
// the settings; so does any command of a server whose answers do not carry
// the precision (an earlier ingot's).
func TestRemoteCommandIsOneRequest(t *testing.T) {
	s := newCountedSite(t)
	for _, tc := range []struct {
		args []string
		want []string
		says string
	}{
		{[]string{"balance"}, []string{api.PathBalances}, "1000.000"},
		{[]string{"balance", "chem"}, []string{api.PathBalance, api.PathShares}, "1000.000"}, // an account: its HFS split too
		{[]string{"account", "list"}, []string{api.PathNodes}, "chem"},
		{[]string{"charge", "list", "--project", "chem"}, []string{api.PathCharges}, ""},
		{[]string{"reservation", "list"}, []string{api.PathReservations}, ""},
		{[]string{"statement", "chem", "--start", "2020-01-01", "--end", "2040-01-01"}, []string{api.PathStatement}, "1000.000"},
		{[]string{"statement", "chem"}, []string{api.PathSettings, api.PathStatement}, "1000.000"},
		{[]string{"deposit", "chem", "0.001"}, []string{api.PathSettings, api.PathDeposits}, "+0.001"},
	} {
		out, paths := s.requests(tc.args...)
		if !slices.Equal(paths, tc.want) {
			t.Errorf("ingot %s made the requests %q, want %q", strings.Join(tc.args, " "), paths, tc.want)
		}
		if !strings.Contains(out, tc.says) {
			t.Errorf("ingot %s printed:\n%s\nwant %q in it", strings.Join(tc.args, " "), out, tc.says)
		}
	}

	s.mu.Lock()
	s.quiet = true
	s.mu.Unlock()
	out, paths := s.requests("balance")
	if want := []string{api.PathBalances, api.PathSettings}; !slices.Equal(paths, want) {
		t.Errorf("ingot balance, of a server that does not say the precision, made the requests %q, want %q", paths, want)
	}
	if !strings.Contains(out, "1000.001") {
		t.Errorf("ingot balance, of a server that does not say the precision, printed:\n%s\nwant 1000.001", out)
	}
}
