package web_test

import (
	"bytes"
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
	"github.com/ingot-hpc/ingot/proto/web"
	"github.com/ingot-hpc/ingot/proto/web/webtest"
)

// site is webtest's bank served with its web page on a loopback port,
// with the clients root (admin), chemmgr (manager of chem), sched
// (scheduler of hpc1), and amy and bob (users). Links and sessions run on
// the bank's clock, which the tests move.
type site struct {
	*ledgertest.Bank
	t        testing.TB
	seeded   *webtest.Bank
	lb       *lien.Bank
	reg      *clients.Registry
	sessions *web.Sessions
	url      string
	handler  http.Handler // the server's, with the page
	keys     map[string]auth.Key
	log      *bytes.Buffer
}

func newSite(t testing.TB) *site {
	t.Helper()
	b := ledgertest.NewBank(t, bolttest.Open)
	s := &site{Bank: b, t: t, seeded: webtest.Seed(t, b.Ledger), lb: lien.New(b.Ledger), keys: map[string]auth.Key{}, log: &bytes.Buffer{}}
	reg, err := clients.New(b.Ledger, [32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	s.reg = reg
	for _, c := range []clients.Spec{{Name: "root", Role: clients.RoleAdmin}, {Name: "chemmgr", Role: clients.RoleManager, Scope: []string{"chem"}},
		{Name: "sched", Role: clients.RoleScheduler, Scope: []string{"hpc1"}}, {Name: "amy", Role: clients.RoleUser, Scope: []string{"amy"}},
		{Name: "bob", Role: clients.RoleUser, Scope: []string{"bob"}}} {
		if _, s.keys[c.Name], err = reg.Add(context.Background(), b.Req(), c); err != nil {
			t.Fatalf("add client %s: %v", c.Name, err)
		}
	}

	// The server's handler is set once the listener's address, which the
	// links start with, is known.
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	s.url = ts.URL
	if s.sessions, err = web.NewSessions(ts.URL, b.Clock.Now); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(s.log, nil))
	v := &auth.Verifier{Lookup: server.KeyLookup(reg), Now: b.Clock.Now}
	h = server.New(b.Ledger, s.lb, reg, v, log, server.WithPage(web.New(s.sessions, log)))
	s.handler = h
	return s
}

// seed runs days of webtest's jobs on the bank's clock.
func (s *site) seed(days int) { s.seeded.Days(days, s.Clock.Advance) }

// link asks POST /v1/web/links, signed with the key of client name.
func (s *site) link(name string) string {
	s.t.Helper()
	l, err := s.askLink(name)
	if err != nil {
		s.t.Fatalf("web link of %s: %v", name, err)
	}
	return l.URL
}

// askLink asks POST /v1/web/links as client name, and returns the server's
// answer or refusal.
func (s *site) askLink(name string) (api.WebLinkResponse, error) {
	s.t.Helper()
	c, err := client.New(s.url, s.keys[name], client.WithClock(s.Clock.Now))
	if err != nil {
		s.t.Fatal(err)
	}
	return c.WebLink(context.Background())
}

// browser is a browser of the site's page: it keeps cookies and does not
// follow redirects, so that tests see them.
type browser struct {
	t      testing.TB
	s      *site
	client *http.Client
}

func (s *site) browser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return &browser{t: s.t, s: s, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// answer is a page as received.
type answer struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(r *http.Request) answer {
	b.t.Helper()
	resp, err := b.client.Do(r)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (b *browser) get(target string) answer {
	b.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.s.url + target
	}
	r, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(r)
}

func (b *browser) post(path string, form url.Values) answer {
	b.t.Helper()
	r, err := http.NewRequest(http.MethodPost, b.s.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(r)
}

// hidden is the value of a form's hidden field in a page.
func hidden(t testing.TB, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<input type="hidden" name="` + name + `" value="([^"]*)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no hidden field %s in the page:\n%s", name, page)
	}
	return html.UnescapeString(m[1])
}

// signIn opens link and presses its button: the browser is signed in.
func (b *browser) signIn(link string) {
	b.t.Helper()
	page := b.get(link)
	if page.status != http.StatusOK {
		b.t.Fatalf("GET the link: %d\n%s", page.status, page.body)
	}
	a := b.post("/signin", url.Values{"token": {hidden(b.t, page.body, "token")}, "csrf": {hidden(b.t, page.body, "csrf")}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/" {
		b.t.Fatalf("sign in: %d, Location %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
}

// signedIn is a browser signed in as client name.
func (s *site) signedIn(name string) *browser {
	s.t.Helper()
	b := s.browser()
	b.signIn(s.link(name))
	return b
}

// cell is the text of the element with data-field=field in the table row
// (or list) of node, in a page.
func cell(t testing.TB, page, node, field string) string {
	t.Helper()
	row := page
	if node != "" {
		i := strings.Index(page, `data-node="`+node+`"`)
		if i < 0 {
			t.Fatalf("no row of %s in the page", node)
		}
		row = page[i:]
		if end := strings.Index(row, "</tr>"); end >= 0 {
			row = row[:end]
		}
	}
	m := regexp.MustCompile(`data-field="` + field + `">([^<]*)<`).FindStringSubmatch(row)
	if m == nil {
		t.Fatalf("no %s of %q in:\n%s", field, node, row)
	}
	return html.UnescapeString(m[1])
}
