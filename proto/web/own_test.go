package web_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// TestProjectOwnFigures: a project's page shows the project's own figures
// (what its liens hold, what its jobs used, its HFS quota and allocation:
// those of `ingot hfs show`), not the account's Amount and Reserved, which
// its account's page shows, labelled as the account's.
func TestProjectOwnFigures(t *testing.T) {
	s := newSite(t)
	s.seed(5)
	shares, err := s.Shares(context.Background(), "chem")
	if err != nil {
		t.Fatal(err)
	}
	var lab1 ledger.NodeShare
	for _, n := range shares.Nodes {
		if n.Name == "chem.lab1" {
			lab1 = n
		}
	}
	account := s.MustBalance("chem")
	for _, who := range []string{"amy", "chemmgr"} {
		page := s.signedIn(who).get("/node?name=chem.lab1")
		if page.status != http.StatusOK {
			t.Fatalf("%s: %d", who, page.status)
		}
		for field, want := range map[string]decimal.Decimal{"own_reserved": lab1.Reserved, "own_used": lab1.Used} {
			if got := cell(t, page.body, "", field); got != report.Grouped(want, 2) {
				t.Errorf("%s: chem.lab1's %s is %s, want %s (hfs show's)", who, field, got, report.Grouped(want, 2))
			}
		}
		if strings.Contains(page.body, report.Grouped(account.Amount, 2)) || strings.Contains(page.body, "Amount left in active allocations") {
			t.Errorf("%s: chem.lab1's page shows the account's amount", who)
		}
		if !strings.Contains(page.body, "Balance of the project chem.lab1") {
			t.Errorf("%s: the project's figures are not labelled as its own", who)
		}
	}
	mgr := s.signedIn("chemmgr")
	page := mgr.get("/node?name=chem.lab1")
	if got := cell(t, page.body, "", "own_quota"); got != report.Grouped(lab1.Quota, 2) {
		t.Errorf("the manager's chem.lab1: quota %s, want %s", got, report.Grouped(lab1.Quota, 2))
	}
	if strings.Contains(s.signedIn("amy").get("/node?name=chem.lab1").body, `data-field="own_quota"`) {
		t.Errorf("amy, who does not read chem's split, is shown a quota")
	}
	page = mgr.get("/node?name=chem")
	if !strings.Contains(page.body, "Balance of the account chem") || cell(t, page.body, "", "amount") != report.Grouped(account.Amount, 2) ||
		cell(t, page.body, "", "reserved") != report.Grouped(account.Reserved, 2) {
		t.Errorf("chem's page does not show the account's figures, labelled")
	}
}

// TestPageWarnings: a node's page warns of an allocation ending within 30
// days and of credits used up, and of nothing on a healthy bank.
func TestPageWarnings(t *testing.T) {
	s := newSite(t)
	s.seed(2)
	if strings.Contains(s.signedIn("amy").get("/node?name=chem.lab1").body, `id="warnings"`) {
		t.Errorf("a healthy project is warned of")
	}
	ctx := context.Background()
	if _, err := s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(100), End: s.Clock.Now().Add(20*24*time.Hour + time.Hour)}); err != nil {
		t.Fatal(err)
	}
	bio := s.MustBalance("bio")
	if _, err := s.Withdraw(ctx, s.Req(), ledger.WithdrawSpec{Account: "bio", Amount: bio.Available}); err != nil {
		t.Fatal(err)
	}
	amy := s.signedIn("amy").get("/node?name=chem.lab1")
	if !strings.Contains(amy.body, `<li data-kind="ending">allocation 3 of chem ends in 20 days`) {
		t.Errorf("chem.lab1 does not warn of its ending allocation:\n%s", amy.body)
	}
	bob := s.signedIn("bob").get("/node?name=bio.lab1")
	if !strings.Contains(bob.body, `<li data-kind="exhausted">bio.lab1 is exhausted`) {
		t.Errorf("bio.lab1 does not warn that it is exhausted:\n%s", bob.body)
	}
}

// TestDateRange: from and to choose the usage's days, on the page and in
// its download: the table is lien.Usage's of the charges from the first
// day's midnight to the end of the last, and the chart has those periods,
// by project, user or machine; the choices keep the range.
func TestDateRange(t *testing.T) {
	s := newSite(t)
	s.seed(40)
	ctx := context.Background()
	from := lien.PeriodStart(s.Clock.Now(), "day", time.Local).AddDate(0, 0, -30)
	to := from.AddDate(0, 0, 9) // ten days
	amy := s.signedIn("amy")
	for _, by := range []string{"project", "user", "machine"} {
		q := "name=chem.lab1&by=" + by + "&from=" + from.Format("2006-01-02") + "&to=" + to.Format("2006-01-02")
		page := amy.get("/node?" + q)
		if page.status != http.StatusOK {
			t.Fatalf("%s: %d\n%s", q, page.status, page.body)
		}
		charges, err := s.lb.FindCharges(ctx, lien.ChargeFilter{Node: "chem.lab1", Since: from, Until: to.AddDate(0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := lien.Usage(charges, []string{by}, "day", time.Local)
		if err != nil {
			t.Fatal(err)
		}
		want := report.UsageTable(rows, []string{by}, true, 2)
		if got := tableRows(t, page.body, "usage"); len(rows) != 10 || !slices.EqualFunc(got, want.Rows, slices.Equal) {
			t.Errorf("by %s: usage\n got %v\nwant %v", by, got, want.Rows)
		}
		if n := strings.Count(page.body, `<rect class="hit"`); n != 2*10 {
			t.Errorf("by %s: %d columns, want 10 in each drawing", by, n)
		}
		if !strings.Contains(page.body, `value="`+from.Format("2006-01-02")+`"`) || !strings.Contains(page.body, "&amp;from="+from.Format("2006-01-02")) {
			t.Errorf("by %s: the range is not in the date fields and the links", by)
		}
		csv := amy.get("/usage.csv?" + q + "&period=day")
		var b bytes.Buffer
		if err := report.Write(&b, report.CSV, want); err != nil {
			t.Fatal(err)
		}
		if csv.status != http.StatusOK || csv.body != b.String() {
			t.Errorf("by %s: usage.csv\n%s\nwant\n%s", by, csv.body, b.String())
		}
	}
}

// TestForecastOnPage: a node's page has its forecast (package forecast's,
// as ingot balance --forecast gives it), and warns when at a recent pace
// the credits run out before the allocations end.
func TestForecastOnPage(t *testing.T) {
	s := newSite(t)
	s.seed(10)
	amy := s.signedIn("amy")
	if page := amy.get("/node?name=chem.lab1"); !strings.Contains(page.body, `id="forecast"`) || strings.Contains(page.body, `data-kind="runway"`) {
		t.Fatalf("a project with years of credits: no forecast, or a runway warning:\n%s", page.body)
	}
	ctx := context.Background()
	chem := s.MustBalance("chem")
	if _, err := s.Withdraw(ctx, s.Req(), ledger.WithdrawSpec{Account: "chem", Amount: chem.Available.Sub(decimal.NewFromInt(20_000))}); err != nil {
		t.Fatal(err)
	}
	fs, err := forecast.Of(ctx, s.Ledger, []string{"chem.lab1"})
	if err != nil {
		t.Fatal(err)
	}
	page := amy.get("/node?name=chem.lab1")
	if !strings.Contains(page.body, `<li data-kind="runway">at the pace of the last`) {
		t.Errorf("no runway warning (forecast %+v):\n%s", fs[0], page.body)
	}
	for _, r := range fs[0].Rates {
		want := `<li data-days="` + strconv.Itoa(r.Days) + `">At the pace of the last ` + strconv.Itoa(r.Days) + ` days, <span data-field="per_day">` + report.Grouped(r.PerDay, 2)
		if !strings.Contains(page.body, want) {
			t.Errorf("no %q in the forecast", want)
		}
	}
}
