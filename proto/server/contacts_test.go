package server_test

import (
	"net/http"
	"testing"

	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/proto/api"
)

// TestContacts: an admin sets any user's contact and reads them all; a
// user client sets its own email and opt-out, not its webhook nor
// another's, and reads only its own.
func TestContacts(t *testing.T) {
	s := newSite(t)
	set := func(key, user, id string, ch digest.ContactChange) *httpResult {
		w := s.do(exchange{key: s.keys[key], method: "POST", target: api.PathContacts, body: api.ContactRequest{Name: user, Change: ch}, requestID: id})
		return &httpResult{code: w.Code, body: w.Body.String()}
	}
	var c digest.Contact
	s.ok(exchange{key: s.keys["root"], method: "POST", target: api.PathContacts, requestID: "c1",
		body: api.ContactRequest{Name: "bob", Change: digest.ContactChange{Email: ptr("bob@example.org"), Webhook: ptr("https://chat.example.org/hooks/x")}}}, &c)
	if c.User != "bob" || c.Email != "bob@example.org" || c.Webhook == "" || c.Off {
		t.Fatalf("bob's contact: %+v", c)
	}
	s.ok(exchange{key: s.keys["amy"], method: "POST", target: api.PathContacts, requestID: "c2",
		body: api.ContactRequest{Name: "amy", Change: digest.ContactChange{Email: ptr("amy@example.org"), Off: ptr(true)}}}, &c)
	if c.User != "amy" || c.Email != "amy@example.org" || !c.Off {
		t.Fatalf("amy's contact: %+v", c)
	}
	for name, r := range map[string]*httpResult{
		"another's":     set("amy", "bob", "c3", digest.ContactChange{Email: ptr("amy@example.org")}),
		"a webhook":     set("amy", "amy", "c4", digest.ContactChange{Webhook: ptr("http://127.0.0.1:9/")}),
		"a manager's":   set("chemmgr", "amy", "c5", digest.ContactChange{Off: ptr(false)}),
		"a scheduler's": set("sched", "amy", "c6", digest.ContactChange{Off: ptr(false)}),
	} {
		if r.code != http.StatusForbidden {
			t.Errorf("%s change: status %d, want 403: %s", name, r.code, r.body)
		}
	}
	for name, r := range map[string]*httpResult{
		"bad email":   set("root", "amy", "c7", digest.ContactChange{Email: ptr("Amy <amy@example.org>")}),
		"bad webhook": set("root", "amy", "c8", digest.ContactChange{Webhook: ptr("ftp://example.org/")}),
	} {
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", name, r.code, r.body)
		}
	}
	if r := set("root", "nobody", "c9", digest.ContactChange{Off: ptr(true)}); r.code != http.StatusNotFound {
		t.Errorf("an unknown user's contact: status %d, want 404: %s", r.code, r.body)
	}
	var l api.List[digest.Contact]
	s.ok(exchange{key: s.keys["amy"], method: "GET", target: api.PathContacts}, &l)
	if len(l.Items) != 1 || l.Items[0].User != "amy" {
		t.Errorf("amy reads contacts %+v", l.Items)
	}
	s.ok(exchange{key: s.keys["root"], method: "GET", target: api.PathContacts}, &l)
	if len(l.Items) != 2 || l.Items[0].User != "amy" || l.Items[1].Email != "bob@example.org" {
		t.Errorf("root reads contacts %+v", l.Items)
	}
}

type httpResult struct {
	code int
	body string
}

func ptr[T any](v T) *T { return &v }
