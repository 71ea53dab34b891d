package web

import (
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// smallSessions are Sessions whose tables hold 3 entries in all and 2 of
// one client, on a clock the test moves.
func smallSessions(t *testing.T) (*Sessions, *time.Time) {
	t.Helper()
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	s, err := NewSessions("http://bank.example", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	s.links, s.sessions = newTable[pending](3, 2), newTable[Session](3, 2)
	return s, &now
}

func codeOf(err error) api.Code {
	if err == nil {
		return ""
	}
	return api.FromError(err).Code
}

// TestServerWideLinkLimit: beyond its own share a client is refused
// (too_many_requests); once the clients together hold the server's bound,
// every new link is refused (unavailable) until some expire.
func TestServerWideLinkLimit(t *testing.T) {
	s, now := smallSessions(t)
	ask := func(name string) error {
		_, err := s.MakeLink(t.Context(), clients.Client{Name: name, Role: clients.RoleUser})
		return err
	}
	for _, step := range []struct {
		who  string
		want api.Code
	}{{"amy", ""}, {"amy", ""}, {"amy", api.CodeTooManyRequests}, {"bob", ""}, {"cid", api.CodeUnavailable}, {"bob", api.CodeUnavailable}} {
		if err := ask(step.who); codeOf(err) != step.want {
			t.Fatalf("%s's link: %v, want %q", step.who, err, step.want)
		}
	}
	*now = now.Add(LinkLifetime)
	if err := ask("cid"); err != nil {
		t.Fatalf("a link once the others expired: %v", err)
	}
	if len(s.links.entries) != 1 || len(s.links.byOwner) != 1 {
		t.Errorf("the expired links are kept: %d entries, owners %v", len(s.links.entries), s.links.byOwner)
	}
}

// TestServerWideSessionLimit: when the server holds its bound of sessions
// a new client's sign-in is refused (unavailable), but a client at its own
// cap still signs in, ending its own oldest session; the link refused is
// used up all the same.
func TestServerWideSessionLimit(t *testing.T) {
	s, _ := smallSessions(t)
	signIn := func(name string) (string, error) {
		l, err := s.MakeLink(t.Context(), clients.Client{Name: name, Role: clients.RoleUser})
		if err != nil {
			t.Fatal(err)
		}
		linkToken := strings.TrimPrefix(l.URL, "http://bank.example/signin?token=")
		p, _ := s.link(linkToken)
		token, _, err := s.signIn(linkToken, p.csrf, p.csrf)
		return token, err
	}
	amy1, _ := signIn("amy")
	amy2, _ := signIn("amy")
	bob, _ := signIn("bob")
	if _, err := signIn("cid"); codeOf(err) != api.CodeUnavailable {
		t.Fatalf("a sign-in with the server full: %v", err)
	}
	if len(s.links.entries) != 0 {
		t.Errorf("the refused sign-in's link is kept")
	}
	if _, err := signIn("amy"); err != nil {
		t.Fatalf("amy's sign-in at her cap, the server full: %v", err)
	}
	for token, want := range map[string]bool{amy1: false, amy2: true, bob: true} {
		if _, ok := s.session(token); ok != want {
			t.Errorf("session %s... live %v, want %v", token[:6], ok, want)
		}
	}
}

// TestTableForgetsOwners: an owner whose entries are all gone (removed,
// expired and swept) is not kept.
func TestTableForgetsOwners(t *testing.T) {
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	tb := newTable[int](2, 2)
	_, d1 := newToken()
	_, d2 := newToken()
	tb.add(d1, "amy", now.Add(time.Minute), 1)
	tb.add(d2, "bob", now.Add(time.Hour), 2)
	tb.remove(d2)
	if _, ok := tb.byOwner["bob"]; ok || len(tb.entries) != 1 {
		t.Errorf("after bob's one entry was removed: %v", tb.byOwner)
	}
	if own := tb.owned("amy", now.Add(time.Minute)); len(own) != 0 || len(tb.byOwner) != 0 || len(tb.entries) != 0 {
		t.Errorf("after amy's one entry expired: %v %v", own, tb.byOwner)
	}
}
