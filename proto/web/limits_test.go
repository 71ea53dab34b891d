package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/web"
)

// TestLinksPerClient: a client asking for links in a loop is refused (429
// too_many_requests, saying so) once it has web.LinksPerClient waiting,
// and no other client is: one user once made 10,000 links in seconds and
// locked every other user and the admin out for as long as they lasted.
// A link used, or expired, makes room again.
func TestLinksPerClient(t *testing.T) {
	s := newSite(t)
	var links []string
	for range web.LinksPerClient {
		links = append(links, s.link("amy"))
	}
	_, err := s.askLink("amy")
	if !client.IsCode(err, api.CodeTooManyRequests) || !strings.Contains(err.Error(), fmt.Sprintf("client amy has %d sign-in links waiting", web.LinksPerClient)) {
		t.Fatalf("amy's link beyond her %d: %v", web.LinksPerClient, err)
	}
	status, e := s.rawLink("amy")
	if status != http.StatusTooManyRequests || e.Code != api.CodeTooManyRequests || e.Details["limit"] != float64(web.LinksPerClient) || e.Details["retry_after"] == nil {
		t.Errorf("amy's link beyond her %d, on the wire: %d %+v", web.LinksPerClient, status, e)
	}
	// The others are not refused, and sign in.
	for _, name := range []string{"bob", "chemmgr", "root"} {
		s.browser().signIn(s.link(name))
	}

	// One of amy's links used: room for exactly one more.
	s.browser().signIn(links[0])
	s.link("amy")
	if _, err := s.askLink("amy"); !client.IsCode(err, api.CodeTooManyRequests) {
		t.Errorf("amy's link beyond her %d once one was used and replaced: %v", web.LinksPerClient, err)
	}
	// Expired, they make room for as many.
	s.Clock.Advance(web.LinkLifetime)
	for range web.LinksPerClient {
		s.link("amy")
	}
}

// rawLink asks POST /v1/web/links as client name, and returns the status
// and error the server answers.
func (s *site) rawLink(name string) (int, api.Error) {
	s.t.Helper()
	r := httptest.NewRequest(http.MethodPost, api.PathWebLinks, strings.NewReader("{}"))
	if err := auth.Sign(r, []byte("{}"), s.keys[name], s.Clock.Now()); err != nil {
		s.t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	var e api.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		s.t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	return w.Code, e
}

// TestSessionsPerClient: a client's sign-in beyond web.SessionsPerClient
// sessions ends its own oldest session, not another client's, and is not
// refused: a person back in a new browser is not locked out by the ones
// left signed in, and one client's sign-ins cannot fill the server's
// sessions (once one user's locked every other sign-in out for 8 hours).
func TestSessionsPerClient(t *testing.T) {
	s := newSite(t)
	bob := s.signedIn("bob")
	var amy []*browser
	for range web.SessionsPerClient {
		amy = append(amy, s.signedIn("amy"))
	}
	newest := s.signedIn("amy")
	if a := amy[0].get("/"); a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin" {
		t.Errorf("amy's oldest session after her sign-in beyond %d: %d", web.SessionsPerClient, a.status)
	}
	for i, b := range append(amy[1:], newest, bob) {
		if a := b.get("/"); a.status != http.StatusOK {
			t.Errorf("session %d after amy's sign-in beyond %d: %d", i+1, web.SessionsPerClient, a.status)
		}
	}
	// Again: the oldest left goes.
	s.signedIn("amy")
	if a := amy[1].get("/"); a.status != http.StatusSeeOther {
		t.Errorf("amy's second session after two sign-ins beyond %d: %d", web.SessionsPerClient, a.status)
	}
	if a := amy[2].get("/"); a.status != http.StatusOK {
		t.Errorf("amy's third session after two sign-ins beyond %d: %d", web.SessionsPerClient, a.status)
	}
}
