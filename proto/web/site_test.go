package web_test

import (
	"bytes"
	"context"
	"fmt"
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
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
	"github.com/ingot-hpc/ingot/proto/web"
)

// site is a bank served with its web page on a loopback port: accounts
// chem (projects chem.lab1 and chem.lab2, split by HFS 60/40) and bio
// (project bio.lab1); users amy (member of chem.lab1) and bob (member of
// bio.lab1); clients root (admin), chemmgr (manager of chem), sched
// (scheduler of hpc1), and amy and bob (users). Links and sessions run on
// the bank's clock, which the tests move.
type site struct {
	*ledgertest.Bank
	t        testing.TB
	lb       *lien.Bank
	reg      *clients.Registry
	sessions *web.Sessions
	url      string
	keys     map[string]auth.Key
	log      *bytes.Buffer
	jobs     int
}

func newSite(t testing.TB) *site {
	t.Helper()
	b := ledgertest.NewBank(t, bolttest.Open)
	s := &site{Bank: b, t: t, lb: lien.New(b.Ledger), keys: map[string]auth.Key{}, log: &bytes.Buffer{}}
	ctx := context.Background()
	b.MustNode("chem", "bio", "bio.lab1")
	for name, share := range map[string]string{"chem.lab1": "0.6", "chem.lab2": "0.4"} {
		spec := ledger.NodeSpec{Name: name, Policy: ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: decimal.RequireFromString(share)}}
		if _, err := b.CreateNode(ctx, b.Req(), spec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.AddMachine(ctx, b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32}}); err != nil {
		t.Fatal(err)
	}
	for user, project := range map[string]string{"amy": "chem.lab1", "bob": "bio.lab1"} {
		spec := ledger.UserSpec{Name: user, DefaultProject: project, Memberships: []ledger.Membership{{Node: project, Role: ledger.RoleMember}}}
		if _, err := b.AddUser(ctx, b.Req(), spec); err != nil {
			t.Fatal(err)
		}
	}
	b.MustDeposit("chem", "100000", ledgertest.Epoch.AddDate(1, 0, 0))
	b.MustDeposit("bio", "50000", time.Time{})

	reg, err := clients.New(b.Ledger, [32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	s.reg = reg
	s.addClient("root", clients.RoleAdmin)
	s.addClient("chemmgr", clients.RoleManager, "chem")
	s.addClient("sched", clients.RoleScheduler, "hpc1")
	s.addClient("amy", clients.RoleUser, "amy")
	s.addClient("bob", clients.RoleUser, "bob")

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

// job runs a job of user on project on hpc1: a lien for procs × seconds,
// then, unless open, a final charge for half of it.
func (s *site) job(user, project string, procs, seconds int64, open bool) {
	s.t.Helper()
	s.jobs++
	job := lien.Job{Machine: "hpc1", ID: fmt.Sprintf("job-%d", s.jobs)}
	req := charge.Request{Resources: charge.Resources{Processors: procs}, WallclockLimitSeconds: seconds}
	if _, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job, User: user, Project: project, Request: req}); err != nil {
		s.t.Fatalf("lien of %s: %v", job.ID, err)
	}
	if open {
		return
	}
	start := s.Clock.Now()
	used := charge.Usage{Resources: req.Resources, WallclockSeconds: seconds / 2, WallclockLimitSeconds: seconds,
		Start: start, End: start.Add(time.Duration(seconds/2) * time.Second), State: charge.Completed}
	if _, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job, Usage: used}); err != nil {
		s.t.Fatalf("charge of %s: %v", job.ID, err)
	}
}

// seed runs jobs on days days: amy's on chem.lab1 each day, longer each
// day, and bob's on bio.lab1 every other day; then leaves a lien of amy's
// open.
func (s *site) seed(days int) {
	s.t.Helper()
	for d := range days {
		s.job("amy", "chem.lab1", 2, int64(600*(d+1)), false)
		if d%2 == 0 {
			s.job("bob", "bio.lab1", 1, 3600, false)
		}
		s.Clock.Advance(24 * time.Hour)
	}
	s.job("amy", "chem.lab1", 4, 3600, true)
}

// link asks POST /v1/web/links, signed with the key of client name.
func (s *site) link(name string) string {
	s.t.Helper()
	c, err := client.New(s.url, s.keys[name], client.WithClock(s.Clock.Now))
	if err != nil {
		s.t.Fatal(err)
	}
	l, err := c.WebLink(context.Background())
	if err != nil {
		s.t.Fatalf("web link of %s: %v", name, err)
	}
	return l.URL
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
