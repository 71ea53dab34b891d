package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"html"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/internal/warning"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/web/webtest"
)

// webBank is webtest's bank, its history begun six days ago, served by
// `ingot serve` as a process of its own, with the API clients amy and bob
// (users), chemmgr (manager of chem) and sched (scheduler of hpc1), whose
// key files are in keys.
type webBank struct {
	t    *testing.T
	srv  *serverProcess
	url  string // where the page is
	keys string
}

// daysOfHistory is how many days of jobs the web bank has: a year, so that
// every chart (31 days, 26 weeks, 12 months) is full.
const daysOfHistory = 365

func newWebBank(t *testing.T, flags ...string) *webBank {
	t.Helper()
	return newWebBankWith(t, nil, flags...)
}

// newWebBankWith is newWebBank, with prepare run on the bank's file after
// its history and clients are made, before the server starts.
func newWebBankWith(t *testing.T, prepare func(w *webBank, file *cliBank), flags ...string) *webBank {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "bank.db")
	seedHistory(t, db)
	file := onFile(t, db)
	// Registered before the server starts, so that it runs after the
	// server is gone.
	t.Cleanup(func() {
		if out, code := file.run("audit"); code != exitOK {
			t.Errorf("audit at cleanup exited %d:\n%s", code, out)
		}
	})
	w := &webBank{t: t, keys: t.TempDir()}
	for _, c := range [][]string{{"amy", "user", "amy"}, {"bob", "user", "bob"}, {"chemmgr", "manager", "chem"}, {"sched", "scheduler", "hpc1"}} {
		file.ok("client", "add", c[0], "--role", c[1], "--scope", c[2], "--key-out", w.keyFile(c[0]))
	}
	if prepare != nil {
		prepare(w, file)
	}
	w.srv = startServer(t, db, flags...)
	w.url = strings.TrimSuffix(w.srv.line("web page at "), "/ (ingot web-login prints a link that signs in)")
	return w
}

// seedHistory makes webtest's bank in a new file, on a clock that starts
// daysOfHistory days ago, so that its jobs are on days of their own and
// its journal ends before now.
func seedHistory(t *testing.T, db string) {
	t.Helper()
	ctx := context.Background()
	store, err := boltstore.Open(db, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-daysOfHistory * 24 * time.Hour)
	if err := ledger.Init(ctx, store, ledger.Settings{Precision: ledger.DefaultPrecision}, ledger.Request{Actor: "test"}, now); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, store, ledger.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	webtest.Seed(t, l).Days(daysOfHistory, func(d time.Duration) { now = now.Add(d) })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func (w *webBank) keyFile(name string) string { return filepath.Join(w.keys, name+".key") }

// as is the command line through the server with client name's key.
func (w *webBank) as(name string) *cliBank {
	return &cliBank{t: w.t, global: []string{"--server", w.srv.url, "--key-file", w.keyFile(name)}}
}

// webLogin runs `ingot web-login` as client name and returns the link it
// prints alone on standard output.
func (w *webBank) webLogin(name string) string {
	w.t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"ingot"}, append(w.as(name).global, "web-login")...), &stdout, &stderr); code != exitOK {
		w.t.Fatalf("web-login as %s exited %d: %s", name, code, stderr.String())
	}
	link := strings.TrimSuffix(stdout.String(), "\n")
	if !strings.HasPrefix(link, w.url+"/signin?token=") || strings.Contains(link, "\n") || !strings.Contains(stderr.String(), "Open it before") {
		w.t.Fatalf("web-login printed %q, and %q on stderr", stdout.String(), stderr.String())
	}
	return link
}

// TestWebLogin: ingot web-login prints a link that a plain HTTP client
// signs in with (as the README's curl walkthrough does), and refuses what
// cannot have one.
func TestWebLogin(t *testing.T) {
	w := newWebBank(t)
	link := w.webLogin("amy")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	page := httpGet(t, hc, link)
	form := url.Values{}
	for _, name := range []string{"token", "csrf"} {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no %s in the sign-in page:\n%s", name, page)
		}
		form.Set(name, html.UnescapeString(m[1]))
	}
	resp, err := hc.PostForm(w.url+"/signin", form) // follows the redirect to /
	if err != nil {
		t.Fatal(err)
	}
	home, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var balances []ledger.NodeBalance
	w.as("amy").json(&balances, "balance")
	if len(balances) != 1 || !strings.Contains(string(home), `<td class="num" data-field="available">`+report.Grouped(balances[0].Available, 2)+`</td>`) {
		t.Errorf("amy's home does not show %+v:\n%s", balances, home)
	}
	// Forms: JSON and -P carry the link and its expiry.
	var out struct {
		URL     string    `json:"url"`
		Expires time.Time `json:"expires"`
	}
	w.as("amy").json(&out, "web-login")
	if !strings.HasPrefix(out.URL, w.url+"/signin?token=") || time.Until(out.Expires) > 5*time.Minute+time.Second || time.Until(out.Expires) < 4*time.Minute {
		t.Errorf("web-login --json: %+v", out)
	}
	if p := w.as("amy").ok("web-login", "-P"); !strings.HasPrefix(p, "URL|Expires\n"+w.url+"/signin?token=") {
		t.Errorf("web-login -P: %q", p)
	}
	// A scheduler has no page; without --server there is no link.
	if out, code := w.as("sched").run("web-login"); code != exitRefused || !strings.Contains(out, "may not POST /v1/web/links") {
		t.Errorf("web-login as the scheduler: exit %d, %q", code, out)
	}
	if out, code := (&cliBank{t: t}).run("web-login"); code != exitUsage || !strings.Contains(out, "give --server") {
		t.Errorf("web-login without --server: exit %d, %q", code, out)
	}
}

// TestWebURL: --web-url is where the links point, for a page behind a
// proxy or under a name of its own; a URL links cannot start with stops
// serve.
func TestWebURL(t *testing.T) {
	w := newWebBank(t, "--web-url", "https://bank.example.org:8443/")
	if w.url != "https://bank.example.org:8443" {
		t.Fatalf("serve says the page is at %q", w.url)
	}
	w.webLogin("amy")
	b := newCLIBank(t)
	b.clientKey("root", "--role", "admin")
	for _, bad := range []string{"ftp://bank.example.org", "https://bank.example.org/ingot", "bank.example.org"} {
		if out, code := b.run("serve", "--listen", "127.0.0.1:0", "--web-url", bad); code != exitUsage || !strings.Contains(out, "--web-url") {
			t.Errorf("serve --web-url %s: exit %d, %q", bad, code, out)
		}
	}
}

func httpGet(t *testing.T, hc *http.Client, target string) string {
	t.Helper()
	resp, err := hc.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", target, resp.StatusCode, err, body)
	}
	return string(body)
}

// chromium is Debian's browser, which the browser test drives.
const chromium = "/usr/bin/chromium"

// The viewports of the browser test: a desktop's, and a phone's.
const (
	viewportWidth, viewportHeight = 1280, 900
	phoneWidth, phoneHeight       = 390, 844
)

// TestWebInBrowser signs in to the page in a real headless Chromium with a
// link from ingot web-login, on a bank with a year of usage, and checks
// what a person would see, each figure against the command line's --json:
// amy's figures are those ingot balance and ingot usage print for her,
// the date range's table is ingot usage's, another user's project is
// refused by URL, and each manager's form posted from her session is
// refused with the API's words; a manager sees chem's HFS tree as ingot
// hfs show prints it, adds a member, transfers credits and changes a
// quota, whose preview is what ingot hfs show prints once it is saved,
// with the keyboard alone (the Tab order is the page's order, and each
// stop has a visible outline); an admin's balances and account page are
// ingot balance's, and each warning (an allocation ending within 30 days,
// credits used up, credits that run out before the allocations end) is
// the command line's. axe-core checks each kind of page. The page is
// photographed whole, on a desktop and on a phone, whose screen it must
// fit without scrolling sideways. Without Chromium the test is skipped,
// except under INGOT_E2E=1 (Debian: apt-get install chromium).
func TestWebInBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatalf("%s is needed under INGOT_E2E=1 (Debian: apt-get install chromium): %v", chromium, err)
		}
		t.Skipf("%s is not installed: skipping the browser test (INGOT_E2E=1 makes this a failure)", chromium)
	}
	w := newWebBankWith(t, prepareWarnings)
	ctx := newBrowser(t)
	axe := axeSource(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("the text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	eval := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js+";true")); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}
	// submitted runs steps that send a form, and waits for the page the
	// answer leads to.
	submitted := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		eval(`document.body.append(Object.assign(document.createElement('i'), {id: 'sent-from'}))`)
		do(what, append(steps, chromedp.WaitNotPresent(chromedp.CSS(`#sent-from`)), chromedp.WaitReady(chromedp.CSS(`footer`)))...)
	}
	lastEntry := func() ledger.Entry {
		t.Helper()
		var entries []ledger.Entry
		w.as("root").json(&entries, "journal", "--last", "1")
		return entries[len(entries)-1]
	}

	// amy signs in with her link, and sees her balance as ingot balance
	// prints it.
	do("sign in as amy", chromedp.EmulateViewport(viewportWidth, viewportHeight), chromedp.Navigate(w.webLogin("amy")),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#balances`)))
	var balances []ledger.NodeBalance
	w.as("amy").json(&balances, "balance")
	if len(balances) != 1 || balances[0].Node != "chem.lab1" || balances[0].AccountAvailable == nil {
		t.Fatalf("amy's balance: %+v", balances)
	}
	nb := balances[0]
	checkAxe(t, ctx, axe, "home")
	for field, want := range map[string]string{"available": report.Grouped(nb.Available, 2), "account_available": report.Grouped(*nb.AccountAvailable, 2),
		"reserved": report.Grouped(nb.Reserved, 2)} {
		if got := text(`tr[data-node="chem.lab1"] [data-field="` + field + `"]`); got != want {
			t.Errorf("amy's home: %s %s, ingot balance %s", field, got, want)
		}
	}

	// Her project's page: the usage table is ingot usage's, per day and user.
	do("chem.lab1's page", chromedp.Navigate(w.url+"/node?name=chem.lab1&by=user"), chromedp.WaitVisible(chromedp.CSS(`#usage`)))
	if got := text(`#balance [data-field="available"]`); got != report.Grouped(nb.Available, 2) {
		t.Errorf("chem.lab1's page: available %s, ingot balance %s", got, report.Grouped(nb.Available, 2))
	}
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll('#usage tbody tr'), tr => Array.from(tr.cells, c => c.textContent))`))
	if err != nil {
		t.Fatal(err)
	}
	// The page's days are the last 31, from the first's midnight.
	today := time.Now()
	firstDay := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.Local).AddDate(0, 0, -30)
	var rows []lien.UsageRow
	w.as("amy").json(&rows, "usage", "--project", "chem.lab1", "--by", "user", "--period", "day", "--since", firstDay.Format(time.DateOnly))
	if len(rows) < 30 {
		t.Fatalf("ingot usage: %d rows, want one a day: %+v", len(rows), rows)
	}
	for i := range rows {
		rows[i].Period = rows[i].Period.Local() // as the command line prints it
	}
	if want := report.UsageTable(rows, []string{"user"}, true, ledger.DefaultPrecision).Rows; !equalRows(cells, want) {
		t.Errorf("the page's usage table:\n%v\ningot usage:\n%v", cells, want)
	}
	// The chart has the last 31 days, one column each.
	columns, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.wide rect.hit').length`))
	if err != nil || columns != 31 {
		t.Errorf("the chart has %d columns (%v), want 31 days", columns, err)
	}
	screenshot(t, ctx, "desktop", viewportWidth, viewportHeight)
	checkAxe(t, ctx, axe, "project")

	// The date range: three days typed into the form's fields, ISO dates,
	// give the table of ingot usage --since FIRST --until DAY-AFTER-LAST.
	first := time.Now().AddDate(0, 0, -100)
	last := first.AddDate(0, 0, 2)
	do("a date range", chromedp.SetValue(chromedp.CSS(`#range-from`), first.Format(time.DateOnly)), chromedp.SetValue(chromedp.CSS(`#range-to`), last.Format(time.DateOnly)),
		chromedp.Submit(chromedp.CSS(`#range-from`)), chromedp.WaitVisible(chromedp.CSS(`a[href="/node?name=chem.lab1"]`)))
	if cells, err = chromedp.Run(ctx, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll('#usage tbody tr'), tr => Array.from(tr.cells, c => c.textContent))`)); err != nil {
		t.Fatal(err)
	}
	rows = nil
	w.as("amy").json(&rows, "usage", "--project", "chem.lab1", "--by", "user", "--period", "day", "--since", first.Format(time.DateOnly), "--until", last.AddDate(0, 0, 1).Format(time.DateOnly))
	for i := range rows {
		rows[i].Period = rows[i].Period.Local()
	}
	if want := report.UsageTable(rows, []string{"user"}, true, ledger.DefaultPrecision).Rows; len(rows) != 3 || !equalRows(cells, want) {
		t.Errorf("the range's usage table:\n%v\ningot usage:\n%v", cells, want)
	}

	// On a phone, nothing is wider than the screen but the tables, which
	// scroll in their own boxes.
	do("a phone's screen", chromedp.EmulateViewport(phoneWidth, phoneHeight), chromedp.Reload())
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil || wide > phoneWidth {
		t.Errorf("the page is %d pixels wide on a %d-pixel phone (%v)", wide, phoneWidth, err)
	}
	screenshot(t, ctx, "phone", phoneWidth, phoneHeight)
	checkAxe(t, ctx, axe, "project-phone")

	// Keyboard only: the first Tab reaches "Skip to the content", Enter
	// follows it; Tabs then reach the choices, and Enter on one opens it.
	do("the keyboard", chromedp.EmulateViewport(viewportWidth, viewportHeight), chromedp.Navigate(w.url+"/node?name=chem.lab1"),
		chromedp.WaitVisible(chromedp.CSS(`#usage`)), chromedp.KeyEvent("\t"))
	if focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`)); err != nil || focused != "Skip to the content" {
		t.Errorf("the first Tab reaches %q (%v)", focused, err)
	}
	do("Tab to By week", chromedp.Focus(chromedp.CSS(`a[href="/node?name=chem.lab1&period=week"]`)), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`a[aria-current="page"][href="/node?name=chem.lab1&period=week"]`)))

	// Another user's project, by URL: the same page as a node that does
	// not exist.
	do("bio.lab1 by URL", chromedp.EmulateViewport(viewportWidth, viewportHeight), chromedp.Navigate(w.url+"/node?name=bio.lab1"))
	if h1 := text(`h1`); h1 != "Not found" {
		t.Errorf("amy on bio.lab1's page sees %q", h1)
	}
	do("chem by URL", chromedp.Navigate(w.url+"/node?name=chem"))
	if h1 := text(`h1`); h1 != "Not found" {
		t.Errorf("amy on chem's page sees %q", h1)
	}

	// amy is shown none of a manager's forms; each, made in her page with
	// her session's token and sent, is refused with the API's words, and
	// her preview of a quota too. Nothing is journaled.
	do("amy's chem.lab1", chromedp.Navigate(w.url+"/node?name=chem.lab1"), chromedp.WaitVisible(chromedp.CSS(`#usage`)))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#members-form, #transfer-form, #quota-form').length`)); err != nil || n != 0 {
		t.Errorf("amy is shown %d of a manager's forms (%v)", n, err)
	}
	before := lastEntry()
	for i, f := range []struct {
		path, fields, says string
	}{
		{"/members", `{node: 'chem.lab1', user: 'bob', op: 'add'}`, "client amy (role user) may not POST /v1/users/modify"},
		{"/transfer", `{from: 'chem', to: 'bio', amount: '1'}`, "client amy (role user) may not POST /v1/transfers"},
		{"/policy", `{node: 'chem.lab1', quota: 'dynamic:0.5'}`, "client amy (role user) may not POST /v1/nodes/modify"},
	} {
		submitted("amy's "+f.path, chromedp.Navigate(w.url+"/node?name=chem.lab1"), chromedp.WaitVisible(chromedp.CSS(`#usage`)))
		submitted("amy posts "+f.path, discard(chromedp.Evaluate[bool](`(() => {
			const f = Object.assign(document.createElement('form'), {method: 'post', action: '`+f.path+`'});
			const fields = Object.assign(`+f.fields+`, {csrf: document.querySelector('form.signout input[name=csrf]').value, request: '`+strings.Repeat(strconv.Itoa(i+1), 32)+`'});
			for (const [name, value] of Object.entries(fields)) f.append(Object.assign(document.createElement('input'), {type: 'hidden', name, value}));
			document.body.append(f); f.submit(); return true })()`)))
		if h1, p := text(`h1`), text(`main p`); h1 != "Refused" || !strings.Contains(p, f.says) {
			t.Errorf("amy's %s: %q, %q; want Refused, %q", f.path, h1, p, f.says)
		}
	}
	do("amy's preview", chromedp.Navigate(w.url+"/policy?node=chem.lab1&quota=dynamic:0.5"))
	if h1 := text(`h1`); h1 != "Refused" {
		t.Errorf("amy's preview of a quota: %q", h1)
	}
	if after := lastEntry(); after.Seq != before.Seq {
		t.Errorf("amy's refused forms journaled %+v", after)
	}

	// Signed out, the page sends her to the sign-in page.
	do("sign out", chromedp.Navigate(w.url+"/"), chromedp.Click(chromedp.CSS(`form.signout button`)), chromedp.WaitVisible(chromedp.CSS(`main pre`)),
		chromedp.Navigate(w.url+"/node?name=chem.lab1"))
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != w.url+"/signin" {
		t.Errorf("after sign-out the page is at %q (%v)", loc, err)
	}

	// The manager of chem sees its HFS tree, as ingot hfs show prints it.
	do("sign in as chemmgr", chromedp.Navigate(w.webLogin("chemmgr")), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#balances`)), chromedp.Navigate(w.url+"/node?name=chem"), chromedp.WaitVisible(chromedp.CSS(`#tree`)))
	var shares ledger.AccountShares
	w.as("chemmgr").json(&shares, "hfs", "show", "chem")
	for _, n := range shares.Nodes {
		for field, want := range map[string]string{"quota": report.Grouped(n.Quota, 2), "allocated": report.Grouped(n.Allocated, 2), "used": report.Grouped(n.Used, 2),
			"available": report.Grouped(n.LienAvailable, 2), "unused": report.Grouped(n.Available, 2)} {
			if got := text(`#tree tr[data-node="` + n.Name + `"] [data-field="` + field + `"]`); got != want {
				t.Errorf("the tree: %s's %s is %s, ingot hfs show %s", n.Name, field, got, want)
			}
		}
	}
	screenshot(t, ctx, "manager", viewportWidth, viewportHeight)
	checkAxe(t, ctx, axe, "account")

	// The statement as a page.
	do("chem's statement", chromedp.Click(chromedp.CSS(`form.statement button`)), chromedp.WaitVisible(chromedp.CSS(`#summary`)))
	var st ledger.Statement
	stmtTo := time.Now().Format(time.DateOnly)
	w.as("chemmgr").json(&st, "statement", "chem", "--start", time.Now().AddDate(0, 0, -time.Now().Day()+1).Format(time.DateOnly), "--end", time.Now().AddDate(0, 0, 1).Format(time.DateOnly))
	if got := text(`#summary [data-field="ending"]`); got != report.Grouped(st.Ending, 2) {
		t.Errorf("the statement page's ending balance %s, ingot statement's %s (to %s)", got, report.Grouped(st.Ending, 2), stmtTo)
	}
	checkAxe(t, ctx, axe, "statement")

	// The manager adds bob to chem.lab2 with the page's form: ingot user
	// list has the membership (TestManagerForms checks the journal's actor
	// and the refusals).
	do("add bob to chem.lab2", chromedp.Navigate(w.url+"/node?name=chem.lab2"), chromedp.WaitVisible(chromedp.CSS(`#members-form`)),
		chromedp.SetValue(chromedp.CSS(`#member-user`), "bob"), chromedp.Submit(chromedp.CSS(`#member-user`)),
		chromedp.WaitVisible(chromedp.CSS(`#balance`)))
	var users []ledger.User
	w.as("chemmgr").json(&users, "user", "list")
	if i := slices.IndexFunc(users, func(u ledger.User) bool { return u.Name == "bob" }); i < 0 ||
		!slices.ContainsFunc(users[i].Memberships, func(m ledger.Membership) bool { return m.Node == "chem.lab2" }) {
		t.Errorf("bob is not a member of chem.lab2 after the form: %+v", users)
	}

	// A project's page has the project's own figures: those of hfs show.
	do("the manager's chem.lab1", chromedp.Navigate(w.url+"/node?name=chem.lab1"), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
	for _, n := range shares.Nodes {
		if n.Name != "chem.lab1" {
			continue
		}
		for field, want := range map[string]string{"own_reserved": report.Grouped(n.Reserved, 2), "own_quota": report.Grouped(n.Quota, 2)} {
			if got := text(`#balance [data-field="` + field + `"]`); got != want {
				t.Errorf("chem.lab1's page: %s is %s, ingot hfs show %s", field, got, want)
			}
		}
	}

	// root, an admin: each row of the balances is ingot balance's, and
	// chem's page ingot balance chem's.
	do("sign in as root", chromedp.Navigate(w.webLogin("root")), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#balances`)))
	rowsOf := func(sel string) map[string]map[string]string {
		t.Helper()
		m, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]map[string]string](`Object.fromEntries(Array.from(document.querySelectorAll('`+sel+`'),
			tr => [tr.dataset.node, Object.fromEntries(Array.from(tr.querySelectorAll('[data-field]'), e => [e.dataset.field, e.textContent]))]))`))
		if err != nil {
			t.Fatalf("the rows %s: %v", sel, err)
		}
		return m
	}
	var all []ledger.NodeBalance
	w.as("root").json(&all, "balance")
	home := rowsOf(`#balances tr[data-node]`)
	if len(home) != len(all) {
		t.Errorf("root's balances have %d rows, ingot balance %d", len(home), len(all))
	}
	for _, nb := range all {
		want := balanceFigures(nb)
		if nb.AccountAvailable != nil {
			want["account_available"] = report.Grouped(*nb.AccountAvailable, 2)
		}
		for field, v := range want {
			if got := home[nb.Node][field]; got != v {
				t.Errorf("root's balances: %s's %s is %s, ingot balance %s", nb.Node, field, got, v)
			}
		}
	}
	checkAxe(t, ctx, axe, "admin-home")
	screenshot(t, ctx, "admin", viewportWidth, viewportHeight)
	do("root's chem", chromedp.Navigate(w.url+"/node?name=chem"), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
	var chemBalance []ledger.NodeBalance
	w.as("root").json(&chemBalance, "balance", "chem")
	for field, want := range balanceFigures(chemBalance[0]) {
		if got := text(`#balance [data-field="` + field + `"]`); got != want {
			t.Errorf("chem's page: %s is %s, ingot balance chem %s", field, got, want)
		}
	}

	// Each warning case, as the command line gives it.
	// A runway's date is now and the time the credits last, to the
	// second: the page's is the command line's asked just before it or
	// just after, as a second may turn between the two.
	warnings := func(node string) []warning.Warning {
		var balances []struct {
			Warnings []warning.Warning `json:"warnings"`
		}
		w.as("root").json(&balances, "balance", node)
		var fs []forecast.Forecast
		w.as("root").json(&fs, "balance", "--forecast", node)
		want := balances[0].Warnings
		for _, f := range fs {
			want = append(want, warning.OfForecast(f)...)
		}
		return want
	}
	for node, kind := range map[string]warning.Kind{"bio": warning.Ending, "spent": warning.Exhausted, "chem": warning.Runway} {
		want := warnings(node)
		do(node+"'s page", chromedp.Navigate(w.url+"/node?name="+node), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll('#warnings li'), li => [li.dataset.kind, li.textContent])`))
		if err != nil {
			t.Fatal(err)
		}
		if after := warnings(node); !slices.EqualFunc(got, want, sameWarning) {
			want = after
		}
		if !slices.ContainsFunc(want, func(w warning.Warning) bool { return w.Kind == kind }) {
			t.Errorf("the command line gives %s no %s warning: %+v", node, kind, want)
		}
		if len(got) != len(want) {
			t.Errorf("%s's page warns %v; the command line %+v", node, got, want)
			continue
		}
		for i := range want {
			if !sameWarning(got[i], want[i]) {
				t.Errorf("%s's page warns %v; the command line %s: %s", node, got[i], want[i].Kind, want[i].Message)
			}
		}
		if kind == warning.Ending {
			checkAxe(t, ctx, axe, "warnings")
		}
	}

	// labmgr, manager of chem and spent, with the keyboard alone. On
	// chem.lab1's page the Tab key visits every link, field and button in
	// the page's order, each with a visible outline.
	do("sign in as labmgr", chromedp.Navigate(w.webLogin("labmgr")), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#balances`)), chromedp.Navigate(w.url+"/node?name=chem.lab1"), chromedp.WaitVisible(chromedp.CSS(`#quota-form`)))
	stops, err := chromedp.Run(ctx, chromedp.Evaluate[int](tabStops+`.length`))
	if err != nil || stops < 20 {
		t.Fatalf("chem.lab1's page has %d places to tab to (%v)", stops, err)
	}
	for i := range stops {
		do("Tab", chromedp.KeyEvent("\t"))
		stop, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[String(`+tabStops+`.indexOf(document.activeElement)), getComputedStyle(document.activeElement).outlineStyle, document.activeElement.outerHTML.slice(0, 80)]`))
		if err != nil || stop[0] != strconv.Itoa(i) || stop[1] == "none" {
			t.Fatalf("Tab %d reaches place %s of the page, outline %s: %s (%v)", i+1, stop[0], stop[1], stop[2], err)
		}
	}

	// The quota: typed into the form and sent with Enter, its preview is
	// ingot hfs show --with's; saved with Tab and Enter, it is ingot hfs
	// show's, journaled with labmgr as the actor.
	do("type a quota", chromedp.Focus(chromedp.CSS(`#quota-value`)))
	eval(`document.querySelector('#quota-value').select()`)
	submitted("preview the quota", chromedp.KeyEvent("dynamic:0.7"), chromedp.KeyEvent("\r"))
	do("the preview", chromedp.WaitVisible(chromedp.CSS(`#split`)))
	preview := rowsOf(`#split tbody tr`)
	var dry, saved ledger.AccountShares
	w.as("labmgr").json(&dry, "hfs", "show", "chem", "--with", "chem.lab1=dynamic:0.7")
	checkAxe(t, ctx, axe, "policy")
	screenshot(t, ctx, "policy", viewportWidth, viewportHeight)
	before = lastEntry()
	do("Tab to the save button", chromedp.Focus(chromedp.CSS(`#split-heading + p + div.scroll`)), chromedp.KeyEvent("\t"))
	if focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`)); err != nil || focused != "Set chem.lab1's quota to dynamic:0.7" {
		t.Fatalf("Tab from the split reaches %q (%v)", focused, err)
	}
	submitted("save the quota", chromedp.KeyEvent("\r"))
	do("after saving", chromedp.WaitVisible(chromedp.CSS(`#tree`)))
	w.as("labmgr").json(&saved, "hfs", "show", "chem")
	for _, split := range []ledger.AccountShares{dry, saved} {
		if len(split.Nodes) != len(preview) {
			t.Errorf("the preview has %d nodes, ingot hfs show %d", len(preview), len(split.Nodes))
		}
		for _, n := range split.Nodes {
			for field, want := range map[string]string{"quota": report.Grouped(n.Quota, 2), "allocated": report.Grouped(n.Allocated, 2),
				"available": report.Grouped(n.LienAvailable, 2), "unused": report.Grouped(n.Available, 2)} {
				if got := preview[n.Name][field]; got != want {
					t.Errorf("the preview's %s of %s is %s, ingot hfs show %s", field, n.Name, got, want)
				}
			}
		}
	}
	if e := lastEntry(); e.Seq != before.Seq+1 || e.Kind != ledger.KindNodeModify || e.Actor != "client:labmgr" {
		t.Errorf("saving the quota journaled %+v", e)
	}

	// A transfer from chem to spent, typed and sent with Enter.
	var chemBefore, spentBefore, chemAfter, spentAfter []ledger.NodeBalance
	w.as("labmgr").json(&chemBefore, "balance", "chem")
	w.as("labmgr").json(&spentBefore, "balance", "spent")
	do("chem's transfer form", chromedp.Navigate(w.url+"/node?name=chem"), chromedp.WaitVisible(chromedp.CSS(`#transfer-form`)),
		chromedp.Focus(chromedp.CSS(`#transfer-to`)), chromedp.KeyEvent("spent\t50"))
	submitted("transfer", chromedp.KeyEvent("\r"))
	w.as("labmgr").json(&chemAfter, "balance", "chem")
	w.as("labmgr").json(&spentAfter, "balance", "spent")
	fifty := decimal.NewFromInt(50)
	if !chemAfter[0].Amount.Equal(chemBefore[0].Amount.Sub(fifty)) || !spentAfter[0].Amount.Equal(spentBefore[0].Amount.Add(fifty)) {
		t.Errorf("after the transfer of 50: chem %s (was %s), spent %s (was %s)", chemAfter[0].Amount, chemBefore[0].Amount, spentAfter[0].Amount, spentBefore[0].Amount)
	}
	if e := lastEntry(); e.Kind != ledger.KindTransfer || e.Actor != "client:labmgr" {
		t.Errorf("the transfer journaled %+v", e)
	}
	if got := text(`#balance [data-field="amount"]`); got != report.Grouped(chemAfter[0].Amount, 2) {
		t.Errorf("chem's page after the transfer: amount %s, ingot balance %s", got, report.Grouped(chemAfter[0].Amount, 2))
	}
}

// axeViolation is one rule axe-core finds broken on a page: its impact
// (minor, moderate, serious, critical) and where.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// axeSource is axe-core's script, which make test fetches (see the
// Makefile): at $INGOT_AXE, or the repository's testdata/axe-core. Without
// it the check is skipped, and under INGOT_E2E=1 fails.
func axeSource(t *testing.T) string {
	t.Helper()
	path := cmp.Or(os.Getenv("INGOT_AXE"), filepath.Join("..", "..", "testdata", "axe-core", "axe.min.js"))
	src, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatalf("axe-core is needed under INGOT_E2E=1 (make axe fetches it): %v", err)
		}
		t.Logf("no axe-core (%v): the accessibility check is skipped (make axe fetches it)", err)
		return ""
	}
	return string(src)
}

// checkAxe runs axe-core in the page the browser shows, with WCAG 2.1 A
// and AA's rules and the best practices, keeps its report beside the
// screenshots as axe-NAME.json, and fails on a serious or critical
// violation.
func checkAxe(t *testing.T, ctx context.Context, src, name string) {
	t.Helper()
	if src == "" {
		return
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+";true")); err != nil {
		t.Fatalf("loading axe-core in %s: %v", name, err)
	}
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}, resultTypes: ['violations']})
		.then(r => r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help, targets: v.nodes.map(n => n.target.join(' '))})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe-core on %s: %v", name, err)
	}
	report, _ := json.MarshalIndent(vs, "", "  ")
	if err := os.WriteFile(filepath.Join(artifacts(t), "axe-"+name+".json"), report, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("axe-core on %s: %s (%s): %s at %v", name, v.ID, v.Impact, v.Help, v.Targets)
		}
	}
}

// artifacts is where the browser test keeps its screenshots and axe-core's
// reports: $INGOT_SCREENSHOTS, or the test's artifact directory (kept
// under the output directory with go test -artifacts -outputdir DIR, as
// make test runs it; a temporary one otherwise).
func artifacts(t *testing.T) string {
	return cmp.Or(os.Getenv("INGOT_SCREENSHOTS"), t.ArtifactDir())
}

// equalRows compares table cells.
func equalRows(got, want [][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if strings.Join(got[i], "\x00") != strings.Join(want[i], "\x00") {
			return false
		}
	}
	return true
}

// newBrowser starts Chromium, headless, in a user data directory of its
// own, talking to the test through a pipe (no debugging port), with what
// reaches out of the machine switched off; the page it visits is on
// loopback. It is stopped at the end of the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		// No scroll bar takes a strip of the page: a whole-page
		// screenshot is as wide as the viewport.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser, with no deadline of its own;
	// each test step has one below.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	ctx, cancelSteps := context.WithTimeout(ctx, 45*time.Second)
	t.Cleanup(cancelSteps)
	return ctx
}

// screenshot photographs the page as it is on the screen and whole, and
// checks both: PNGs, the first of exactly the viewport, the second as wide
// as the viewport and at least as tall. They are kept under the test's
// temporary directory, or in $INGOT_SCREENSHOTS when that names one.
func screenshot(t *testing.T, ctx context.Context, name string, width, height int) {
	t.Helper()
	dir := artifacts(t)
	for _, shot := range []struct {
		kind   string
		action chromedp.Action[[]byte]
		exact  bool
	}{{"screen", chromedp.CaptureScreenshot(), true}, {"full", chromedp.FullScreenshot(100), false}} {
		raw, err := chromedp.Run(ctx, shot.action)
		if err != nil {
			t.Fatalf("screenshot %s %s: %v", name, shot.kind, err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("screenshot %s %s is not a PNG: %v", name, shot.kind, err)
		}
		if colours(img) < 2 {
			t.Errorf("screenshot %s %s is blank", name, shot.kind)
		}
		size := img.Bounds().Size()
		if size.X != width || (shot.exact && size.Y != height) || size.Y < height {
			t.Errorf("screenshot %s %s is %dx%d, the viewport %dx%d", name, shot.kind, size.X, size.Y, width, height)
		}
		if err := os.WriteFile(filepath.Join(dir, "web-"+name+"-"+shot.kind+".png"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// colours counts the colours of an image, up to 2: a blank one has one.
func colours(img image.Image) int {
	seen := map[color.Color]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y && len(seen) < 2; y += 4 {
		for x := b.Min.X; x < b.Max.X && len(seen) < 2; x += 4 {
			seen[img.At(x, y)] = true
		}
	}
	return len(seen)
}

// balanceFigures are a balance's figures as the page shows them, by the
// fields that name them.
func balanceFigures(nb ledger.NodeBalance) map[string]string {
	return map[string]string{"available": report.Grouped(nb.Available, 2), "reserved": report.Grouped(nb.Reserved, 2),
		"amount": report.Grouped(nb.Amount, 2), "credit_limit": report.Grouped(nb.CreditLimit, 2)}
}

// prepareWarnings gives the browser test's bank a case of each warning:
// bio an allocation that ends in 20 days, the account spent one used up,
// chem 20,000 credits left, which at its pace run out before its
// allocation ends; and the clients root (admin) and labmgr (manager of
// chem and spent).
func prepareWarnings(w *webBank, file *cliBank) {
	file.ok("deposit", "bio", "100", "--end", time.Now().Add(20*24*time.Hour+12*time.Hour).Format(time.RFC3339))
	file.ok("account", "create", "spent")
	file.ok("deposit", "spent", "100")
	file.ok("withdraw", "spent", "100")
	var chem []ledger.NodeBalance
	file.json(&chem, "balance", "chem")
	file.ok("withdraw", "chem", chem[0].Available.Sub(decimal.NewFromInt(20_000)).String())
	file.ok("client", "add", "root", "--role", "admin", "--key-out", w.keyFile("root"))
	file.ok("client", "add", "labmgr", "--role", "manager", "--scope", "chem", "--scope", "spent", "--key-out", w.keyFile("labmgr"))
}

// tabStops are the places of a page the Tab key visits, in the page's
// order: its links, buttons, fields and focusable regions that are shown.
const tabStops = `Array.from(document.querySelectorAll('a[href], button, input:not([type=hidden]), select, [tabindex="0"]')).filter(e => e.getClientRects().length > 0)`

// discard is action a with its value dropped, a step of chromedp.Do.
func discard[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// sameWarning says whether a warning the page shows (its kind and text)
// is w.
func sameWarning(shown []string, w warning.Warning) bool {
	return len(shown) == 2 && shown[0] == string(w.Kind) && shown[1] == w.Message
}
