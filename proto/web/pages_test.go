package web_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
)

// TestPageNumbers: the figures of the pages are those the bank's own
// balance, usage and HFS code give for the same client: amy's project,
// the manager's tree.
func TestPageNumbers(t *testing.T) {
	s := newSite(t)
	s.seed(5)
	ctx := context.Background()
	amy := s.signedIn("amy")
	home := amy.get("/")
	nb := s.MustBalance("chem.lab1")
	if nb.AccountAvailable == nil || nb.AccountAvailable.Equal(nb.Available) {
		t.Fatalf("the seeded bank should split chem: %+v", nb)
	}
	for field, want := range map[string]string{"available": report.Grouped(nb.Available, 2), "account_available": report.Grouped(*nb.AccountAvailable, 2),
		"reserved": report.Grouped(nb.Reserved, 2), "amount": report.Grouped(nb.Amount, 2)} {
		if got := cell(t, home.body, "chem.lab1", field); got != want {
			t.Errorf("home: chem.lab1's %s is %s, want %s", field, got, want)
		}
	}
	if strings.Contains(home.body, `data-node="chem"`) || strings.Contains(home.body, `data-node="bio`) {
		t.Errorf("amy's home shows another node:\n%s", home.body)
	}

	for _, by := range []string{"project", "user"} {
		for _, period := range lien.UsagePeriods {
			page := amy.get("/node?name=chem.lab1&period=" + period + "&by=" + by)
			if page.status != http.StatusOK {
				t.Fatalf("chem.lab1 by %s per %s: %d\n%s", by, period, page.status, page.body)
			}
			if got := cell(t, page.body, "", "available"); got != report.Grouped(nb.Available, 2) {
				t.Errorf("chem.lab1's page: available %s, want %s", got, report.Grouped(nb.Available, 2))
			}
			// The usage table is lien.Usage's of the project's charges since
			// the chart's first period.
			since := firstPeriod(s.Clock.Now(), period)
			charges, err := s.lb.FindCharges(ctx, lien.ChargeFilter{Node: "chem.lab1", Since: since})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := lien.Usage(charges, []string{by}, period, time.Local)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 0 {
				t.Fatalf("no usage to compare per %s", period)
			}
			want := report.UsageTable(rows, []string{by}, true, 2)
			if got := tableRows(t, page.body, "usage"); !slices.EqualFunc(got, want.Rows, slices.Equal) {
				t.Errorf("usage by %s per %s:\n got %v\nwant %v", by, period, got, want.Rows)
			}
			// The chart's periods are fitted to the data: from the first
			// with charges to now, in each of its two drawings.
			columns := regexp.MustCompile(`<rect class="hit"`).FindAllStringIndex(page.body, -1)
			periods := 0
			for at := lien.PeriodStart(rows[0].Period, period, time.Local); !at.After(s.Clock.Now()); at = lien.PeriodAdd(at, period, 1) {
				periods++
			}
			if len(columns) != 2*periods {
				t.Errorf("per %s: %d columns, periods %d in each of 2 drawings", period, len(columns), periods)
			}
		}
	}
	if page := amy.get("/node?name=chem.lab1"); strings.Contains(page.body, `id="tree"`) || !strings.Contains(page.body, "job-") {
		t.Errorf("amy's page shows the tree of chem, or no open lien")
	}

	// The manager reads chem's tree: the figures of ingot hfs show.
	shares, err := s.Shares(ctx, "chem")
	if err != nil {
		t.Fatal(err)
	}
	page := s.signedIn("chemmgr").get("/node?name=chem")
	if page.status != http.StatusOK || !strings.Contains(page.body, `id="tree"`) {
		t.Fatalf("the manager's chem: %d\n%s", page.status, page.body)
	}
	for _, n := range shares.Nodes {
		for field, want := range map[string]string{"quota": report.Grouped(n.Quota, 2), "allocated": report.Grouped(n.Allocated, 2), "used": report.Grouped(n.Used, 2),
			"available": report.Grouped(n.LienAvailable, 2), "unused": report.Grouped(n.Available, 2)} {
			if got := cell(t, page.body, n.Name, field); got != want {
				t.Errorf("tree: %s's %s is %s, want %s", n.Name, field, got, want)
			}
		}
	}
}

// firstPeriod is the start of the first of a chart's periods.
func firstPeriod(now time.Time, period string) time.Time {
	n := map[string]int{"day": 31, "week": 26, "month": 12}[period]
	return lien.PeriodAdd(lien.PeriodStart(now, period, time.Local), period, -(n - 1))
}

// tableRows are the cells of a table's body rows in a page.
func tableRows(t *testing.T, page, id string) [][]string {
	t.Helper()
	i := strings.Index(page, `<table id="`+id+`">`)
	if i < 0 {
		t.Fatalf("no table %s", id)
	}
	body := page[i:]
	body = body[strings.Index(body, "<tbody>"):strings.Index(body, "</tbody>")]
	var rows [][]string
	for _, tr := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(body, -1) {
		var cells []string
		for _, c := range regexp.MustCompile(`<t[hd][^>]*>([^<]*)</t[hd]>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, c[1])
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestOthersRefused: a user's session cannot read a node it is not a
// member of, by URL or by parameter, and cannot tell it from a node that
// does not exist; a manager's session is kept to its subtree.
func TestOthersRefused(t *testing.T) {
	s := newSite(t)
	s.seed(2)
	amy := s.signedIn("amy")
	notFound := amy.get("/node?name=nothing")
	if notFound.status != http.StatusNotFound {
		t.Fatalf("an unknown node: %d", notFound.status)
	}
	for _, path := range []string{
		"/node?name=bio.lab1", "/node?name=bio", "/node?name=chem", "/node?name=chem.lab2",
		"/node?name=bio.lab1&period=week&by=user",
		"/usage.csv?name=bio.lab1", "/usage.csv?name=chem",
		"/statement.csv?account=bio&from=2026-01-01&to=2026-12-31",
		"/statement.csv?account=chem&from=2026-01-01&to=2026-12-31",
	} {
		a := amy.get(path)
		if a.status != http.StatusNotFound || a.body != notFound.body {
			t.Errorf("amy GET %s: %d, and a page unlike an unknown node's:\n%s", path, a.status, a.body)
		}
	}
	// A parameter more, repeated, or of another name, is refused as bad
	// input, whoever's node it names.
	for _, path := range []string{"/node?name=chem.lab1&name=bio.lab1", "/node?name=chem.lab1&node=bio", "/?name=bio", "/?node=bio",
		"/node?name=chem.lab1&period=year", "/node?name=chem.lab1&by=account", "/node?name=chem.lab1&from=11/01/2026", "/node?name=chem.lab1&from=2026-11-02&to=2026-11-01", "/node?name=chem.lab1&from=2020-01-01", "/node?name=", "/usage.csv?name=bio.lab1&user=bob"} {
		if a := amy.get(path); a.status != http.StatusBadRequest || strings.Contains(a.body, "bio.lab1</") {
			t.Errorf("amy GET %s: %d\n%s", path, a.status, a.body)
		}
	}
	// What amy reads holds nothing of bob's.
	for _, path := range []string{"/", "/node?name=chem.lab1&by=user", "/usage.csv?name=chem.lab1&by=user"} {
		if a := amy.get(path); a.status != http.StatusOK || strings.Contains(a.body, "bob") || strings.Contains(a.body, "bio") {
			t.Errorf("amy GET %s: %d, or shows bob's:\n%s", path, a.status, a.body)
		}
	}
	mgr := s.signedIn("chemmgr")
	for _, path := range []string{"/node?name=bio", "/node?name=bio.lab1", "/statement.csv?account=bio&from=2026-01-01&to=2026-01-31"} {
		if a := mgr.get(path); a.status != http.StatusNotFound {
			t.Errorf("the manager of chem GET %s: %d", path, a.status)
		}
	}
	if a := mgr.get("/"); strings.Contains(a.body, `data-node="bio`) || !strings.Contains(a.body, `data-node="chem"`) {
		t.Errorf("the manager's home:\n%s", a.body)
	}
	if a := s.signedIn("root").get("/"); !strings.Contains(a.body, `data-node="bio"`) || !strings.Contains(a.body, `data-node="chem"`) {
		t.Errorf("the admin's home:\n%s", a.body)
	}
}

// TestStatementCSV: the download is ingot statement --csv of the same
// account and days.
func TestStatementCSV(t *testing.T) {
	s := newSite(t)
	s.seed(3)
	mgr := s.signedIn("chemmgr")
	from := s.Clock.Now().AddDate(0, 0, -2).In(time.Local)
	first := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.Local)
	last := first.AddDate(0, 0, 1)
	a := mgr.get("/statement.csv?account=chem&from=" + first.Format("2006-01-02") + "&to=" + last.Format("2006-01-02"))
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		a.header.Get("Content-Disposition") != `attachment; filename="chem-statement-`+first.Format("2006-01-02")+`-to-`+last.Format("2006-01-02")+`.csv"` {
		t.Fatalf("statement: %d %v\n%s", a.status, a.header, a.body)
	}
	st, err := s.Statement(context.Background(), "chem", first, last.AddDate(0, 0, 1), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.DebitLines) == 0 {
		t.Fatalf("no debits in the period to compare")
	}
	var want bytes.Buffer
	if err := report.WriteStatement(&want, report.CSV, st, 2, false); err != nil {
		t.Fatal(err)
	}
	if a.body != want.String() {
		t.Errorf("statement CSV:\n%s\nwant\n%s", a.body, want.String())
	}
	for _, bad := range []string{"from=2026-02-01&to=2026-01-01", "from=2026-1-1&to=2026-01-31", "from=1969-12-31&to=2026-01-31", "to=2026-01-31", "from=x&to=y"} {
		if a := mgr.get("/statement.csv?account=chem&" + bad); a.status != http.StatusBadRequest {
			t.Errorf("statement %s: %d", bad, a.status)
		}
	}
}

// TestUsageCSV: the download is the page's usage table, as ingot usage
// --csv prints it.
func TestUsageCSV(t *testing.T) {
	s := newSite(t)
	s.seed(3)
	amy := s.signedIn("amy")
	page := amy.get("/node?name=chem.lab1&period=week&by=user")
	a := amy.get("/usage.csv?name=chem.lab1&period=week&by=user")
	if a.status != http.StatusOK || !strings.HasPrefix(a.body, "Period,User,Jobs,Charges,Charged,Refunded,Net\n") {
		t.Fatalf("usage CSV: %d\n%s", a.status, a.body)
	}
	var lines []string
	for _, row := range tableRows(t, page.body, "usage") {
		lines = append(lines, strings.Join(row, ","))
	}
	if got := strings.Split(strings.TrimSuffix(a.body, "\n"), "\n")[1:]; !slices.Equal(got, lines) {
		t.Errorf("usage CSV rows %q, the page's %q", got, lines)
	}
}

// TestAccountPageOfAUser: a user whose bank user is a member of the
// account reads it as the API lets it: the tree and the statement form.
func TestAccountPageOfAUser(t *testing.T) {
	s := newSite(t)
	if _, err := s.ModifyUser(context.Background(), s.Req(), "amy", ledger.UserChange{Add: []ledger.Membership{{Node: "chem", Role: ledger.RoleManager}}}); err != nil {
		t.Fatal(err)
	}
	a := s.signedIn("amy").get("/node?name=chem")
	if a.status != http.StatusOK || !strings.Contains(a.body, `id="tree"`) || !strings.Contains(a.body, `action="/statement"`) {
		t.Errorf("amy, manager of chem, on chem's page: %d\n%s", a.status, a.body)
	}
}

// TestAccountPageListsTheNextUpcoming: the allocations table lists those
// active and the next to start, and says that more start later.
func TestAccountPageListsTheNextUpcoming(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	chem := s.signedIn("chemmgr")
	before := len(tableRows(t, chem.get("/node?name=chem").body, "allocations"))
	for i := range ledger.UpcomingListed + 1 {
		spec := ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(t, "1"), Start: s.Clock.Now().AddDate(0, 0, i+1)}
		if _, err := s.Deposit(ctx, s.Req(), spec); err != nil {
			t.Fatal(err)
		}
	}
	page := chem.get("/node?name=chem")
	if got := len(tableRows(t, page.body, "allocations")); got != before+ledger.UpcomingListed || !strings.Contains(page.body, `id="upcoming-left-out"`) {
		t.Errorf("chem's page lists %d allocations (%d before the %d preset), or says nothing of those left out:\n%s", got, before, ledger.UpcomingListed+1, page.body)
	}
}

// TestPageOfAnArchivedBank: once the bank's first weeks are in an archive
// (which the server does not read), a project's page charts the periods
// the bank keeps and says where the rest is, rather than failing.
func TestPageOfAnArchivedBank(t *testing.T) {
	s := newSite(t)
	s.seed(40)
	ctx := context.Background()
	before := s.Clock.Now().AddDate(0, 0, -20)
	dst, err := boltstore.Open(filepath.Join(t.TempDir(), "archive.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := s.Archive(ctx, before, dst, "archive.db", nil); err != nil {
		t.Fatal(err)
	}
	amy := s.signedIn("amy")
	for _, period := range lien.UsagePeriods {
		page := amy.get("/node?name=chem.lab1&by=user&period=" + period)
		if page.status != http.StatusOK || !strings.Contains(page.body, "is in the bank's archive") {
			t.Errorf("chem.lab1 per %s: %d\n%s", period, page.status, page.body)
		}
	}
}
