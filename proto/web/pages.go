package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/internal/warning"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// The pages read the bank through the API's own handlers (server.Call) as
// the session's client: what a page shows is what `ingot balance`, `ingot
// usage`, `ingot hfs show` and `ingot statement` print for that client,
// and what it may not read the API refuses.

// page is what every template has.
type page struct {
	Title string
	// Client is the session's client; nil before sign-in.
	Client *clients.Client
	// CSRF is the token of the sign-out form.
	CSRF string
	// Zone names the server's time zone, which times are shown in.
	Zone      string
	precision int32
}

// Amount shows an amount with the bank's precision, as the command line
// does, with its digits grouped in thousands for people.
func (pg page) Amount(d decimal.Decimal) string { return report.Grouped(d, pg.precision) }

// Time shows a stored (UTC) time in the server's zone, which it names.
func (pg page) Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(timeLayout)
}

// End shows an allocation's end ("never" for none).
func (pg page) End(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return pg.Time(t)
}

// pageOf is the page of a request, titled title.
func (p *Pages) pageOf(req *request, title string) page {
	name, offset := time.Now().Zone()
	pg := page{Title: title, Zone: fmt.Sprintf("%s (UTC%s)", name, time.Unix(0, 0).In(time.FixedZone("", offset)).Format("-07:00"))}
	if req.sess.Client.Name != "" {
		pg.Client, pg.CSRF = &req.sess.Client, req.sess.CSRF
	}
	return pg
}

// dataPage is pageOf with the bank's settings, which every page that shows
// amounts reads first.
func (p *Pages) dataPage(req *request, title string) (page, api.Settings, error) {
	pg := p.pageOf(req, title)
	settings, err := call[api.Settings](req, api.PathSettings, api.NoQuery{})
	pg.precision = settings.Precision
	return pg, settings, err
}

// call reads the bank at path with query in, as the session's client.
func call[Out any](req *request, path string, in any) (Out, error) {
	return api.CallAs[Out](req.r.Context(), req.bank, req.sess.Client, ledger.Request{}, http.MethodGet, path, in)
}

// homePage lists the balances the session reads (those of `ingot
// balance`): a user's projects, a manager's subtrees, every account for an
// admin.
type homePage struct {
	page
	Balances []ledger.NodeBalance
	// Split says that a project's HFS share makes what a lien on it would
	// get less than its account has: the account's figure is shown too.
	Split bool
}

func (p *Pages) home(req *request) error {
	if err := api.DecodeQuery(pathHome, req.r.URL.Query(), &api.NoQuery{}); err != nil {
		return err
	}
	pg, _, err := p.dataPage(req, "Balances")
	if err != nil {
		return err
	}
	b, err := call[api.BalancesResponse](req, api.PathBalances, api.BalancesQuery{})
	if err != nil {
		return err
	}
	data := homePage{page: pg, Balances: b.Balances}
	for _, nb := range b.Balances {
		data.Split = data.Split || nb.AccountAvailable != nil
	}
	p.render(req, http.StatusOK, "home", data)
	return nil
}

// nodePage is an account's or a project's page.
type nodePage struct {
	page
	Query     nodeQuery
	Account   string
	IsAccount bool
	Balance   ledger.NodeBalance
	// Own are a project's own figures (nil on an account's page, whose
	// Balance is its own).
	Own      *ownFigures
	Warnings []warning.Warning
	// Forecast is the node's pace of spending and where it leads;
	// NoForecast says that the bank's archive holds what it needs.
	Forecast   *forecast.Forecast
	NoForecast bool
	Liens      []ledger.Lien
	// Usage is the node's usage in the chart's periods, charted and as the
	// table `ingot usage` prints.
	Charts     []chart
	UsageTable report.Table
	// Since and Until (zero: now) bound the charges of the usage;
	// RangeFrom and RangeTo are the range's first and last days, for the
	// date fields.
	Since, Until       time.Time
	RangeFrom, RangeTo string
	// ArchivedBefore is the date before which the bank's history is in an
	// archive, which the page does not show (zero: none).
	ArchivedBefore time.Time
	Periods        []choice
	Bys            []choice
	UsageCSV       string
	// Tree is the account's HFS split, where the session reads the
	// account (a manager's, an admin's); Below otherwise lists the
	// projects under the node.
	Tree  *ledger.AccountShares
	Below []string
	// Manages says that the session's client may use the manager's forms,
	// each made with a request id of its own.
	Manages                         bool
	MembersRequest, TransferRequest string
	// QuotaForm previews a project's new quota, where the session reads
	// the account's split.
	QuotaForm *quotaForm
	// StatementFrom and StatementTo are the statement form's first and
	// last days: this month so far.
	StatementFrom, StatementTo string
}

// ownFigures are a project's own: what its open liens hold, what its
// jobs used since its account's active allocations began, and its HFS
// share where the session reads the account's split. Its Available is
// the balance's (what a lien on it would get); the account's Amount,
// Reserved and credit limit are the account's, shown on its page only.
type ownFigures struct {
	Reserved  decimal.Decimal
	Used      decimal.Decimal
	UsedSince time.Time // zero: no active allocation
	Share     *ledger.NodeShare
}

// choice is a link to the same page with another parameter.
type choice struct {
	Label, URL string
	Current    bool
}

func (p *Pages) node(req *request) error {
	q, err := decodeNodeQuery(pathNode, req.r.URL.Query())
	if err != nil {
		return err
	}
	pg, settings, err := p.dataPage(req, q.Name)
	if err != nil {
		return err
	}
	// The balance first: it refuses a node the session does not read.
	nb, err := call[ledger.NodeBalance](req, api.PathBalance, api.BalanceQuery{Node: q.Name})
	if err != nil {
		return err
	}
	data := nodePage{page: pg, Query: q, Account: ledger.AccountOf(q.Name), IsAccount: ledger.ParentOf(q.Name) == "", Balance: nb,
		UsageCSV: usageURL(q)}
	liens, err := call[api.List[ledger.Lien]](req, api.PathLiens, api.LiensQuery{Node: q.Name})
	if err != nil {
		return err
	}
	data.Liens = liens.Items
	data.Warnings = warning.Of(nb, settings.Now, settings.Precision)
	fs, err := call[api.List[forecast.Forecast]](req, api.PathForecast, api.ForecastQuery{Node: q.Name})
	switch {
	case err != nil && !settings.ArchivedBefore.IsZero() && api.FromError(err).Code == api.CodeNotFound:
		// The forecast reads the last 30 days' charges, which the bank's
		// archive may hold; the server reads no archive.
		data.NoForecast = true
	case err != nil:
		return err
	}
	for _, f := range fs.Items {
		data.Forecast = &f
		data.Warnings = append(data.Warnings, warning.OfForecast(f)...)
	}
	if !data.IsAccount {
		if data.Own, err = own(req, nb, liens.Items, settings.ArchivedBefore); err != nil {
			return err
		}
	}
	u, err := usage(req, q, settings)
	if err != nil {
		return err
	}
	data.Since, data.Until, data.ArchivedBefore = u.since, u.until, settings.ArchivedBefore
	data.RangeFrom, data.RangeTo = u.starts[0].Format(dateLayout), u.lastDay.Format(dateLayout)
	data.Charts = usageCharts(u.rows, q.By, q.Period, u.starts, settings.Precision)
	data.UsageTable = report.UsageTable(u.rows, []string{q.By}, true, settings.Precision)
	for _, period := range lien.UsagePeriods {
		c := q
		c.Period = period
		data.Periods = append(data.Periods, choice{Label: "By " + period, URL: nodeURL(c), Current: period == q.Period})
	}
	for _, by := range usageBys {
		c := q
		c.By = by
		data.Bys = append(data.Bys, choice{Label: "Per " + by, URL: nodeURL(c), Current: by == q.By})
	}
	shares, err := call[ledger.AccountShares](req, api.PathShares, api.SharesQuery{Account: data.Account})
	switch {
	case err == nil:
		data.Tree = &shares
		if data.Own != nil {
			for i := range shares.Nodes {
				if shares.Nodes[i].Name == q.Name {
					data.Own.Share = &shares.Nodes[i]
				}
			}
		}
	case api.FromError(err).Code != api.CodeForbidden:
		return err
	default:
		below, err := call[api.List[ledger.Node]](req, api.PathNodes, api.NodesQuery{Under: q.Name + "."})
		if err != nil {
			return err
		}
		for _, n := range below.Items {
			data.Below = append(data.Below, n.Name)
		}
	}
	data.Manages, data.MembersRequest, data.TransferRequest = manages(pg.Client), newRequestID(), newRequestID()
	if data.Manages && data.Tree != nil {
		data.QuotaForm = &quotaForm{Projects: projectsOf(data.Tree)}
		if data.Own != nil && data.Own.Share != nil {
			data.QuotaForm.Node, data.QuotaForm.Quota = q.Name, data.Own.Share.Policy.QuotaText()
		}
	}
	today := settings.Now.In(time.Local)
	data.StatementFrom = lien.PeriodStart(today, "month", time.Local).Format(dateLayout)
	data.StatementTo = today.Format(dateLayout)
	p.render(req, http.StatusOK, "node", data)
	return nil
}

// own are project nb's own figures: its open liens' holds, and the net
// usage of its subtree since the earliest start of its account's active
// allocations, or since archivedBefore when that is later (the server
// reads no archive).
func own(req *request, nb ledger.NodeBalance, liens []ledger.Lien, archivedBefore time.Time) (*ownFigures, error) {
	o := &ownFigures{Reserved: decimal.Zero, Used: decimal.Zero}
	for _, l := range liens {
		for _, h := range l.Holds {
			o.Reserved = o.Reserved.Add(h.Amount)
		}
	}
	for _, a := range nb.Allocations {
		if a.Active && (o.UsedSince.IsZero() || a.Start.Before(o.UsedSince)) {
			o.UsedSince = a.Start
		}
	}
	if o.UsedSince.IsZero() {
		return o, nil
	}
	if o.UsedSince.Before(archivedBefore) {
		o.UsedSince = archivedBefore
	}
	rows, err := call[api.List[lien.UsageRow]](req, api.PathUsage,
		api.UsageQuery{Node: nb.Node, By: "project", Period: "month", Since: o.UsedSince, TZ: "Local"})
	for _, r := range rows.Items {
		o.Used = o.Used.Add(r.Net)
	}
	return o, err
}

// usageRange is a node's usage over the chart's periods.
type usageRange struct {
	// starts are the chart's periods; since and until (zero: now) bound
	// the charges asked for, lastDay is the range's last day.
	starts       []time.Time
	since, until time.Time
	lastDay      time.Time
	rows         []lien.UsageRow
}

// usage is the node's usage in the chart's periods, in the server's zone,
// as GET /v1/usage reports it (`ingot usage --project NODE --by BY
// --period PERIOD --since SINCE [--until UNTIL]`): in the range q chooses,
// or else in the default periods up to now from the first with charges.
func usage(req *request, q nodeQuery, settings api.Settings) (usageRange, error) {
	starts, err := periodStarts(settings.Now, q.Period, q.FromDay, q.ToDay)
	if err != nil {
		return usageRange{}, err
	}
	u := usageRange{until: q.ToDay, lastDay: settings.Now.In(time.Local)}
	if !q.ToDay.IsZero() {
		u.lastDay = q.ToDay.AddDate(0, 0, -1)
	}
	u.starts, u.since = keptPeriods(starts, settings.ArchivedBefore)
	rows, err := call[api.List[lien.UsageRow]](req, api.PathUsage,
		api.UsageQuery{Node: q.Name, By: q.By, Period: q.Period, Since: u.since, Until: u.until, TZ: "Local"})
	u.rows = rows.Items
	if q.From == "" {
		u.starts = fitted(u.starts, u.rows)
	}
	return u, err
}

// usageCSV downloads the usage table of a node's page, as `ingot usage
// --project NODE --by BY --period PERIOD --since START --csv` prints it.
func (p *Pages) usageCSV(req *request) error {
	q, err := decodeNodeQuery(pathUsage, req.r.URL.Query())
	if err != nil {
		return err
	}
	_, settings, err := p.dataPage(req, "")
	if err != nil {
		return err
	}
	// GET /v1/usage filters what the session does not read; the node is
	// refused first, as on its page.
	if _, err := call[ledger.Node](req, api.PathNode, api.NameQuery{Name: q.Name}); err != nil {
		return err
	}
	u, err := usage(req, q, settings)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := report.Write(&b, report.CSV, report.UsageTable(u.rows, []string{q.By}, true, settings.Precision)); err != nil {
		return err
	}
	sendCSV(req, fmt.Sprintf("%s-usage-by-%s-from-%s.csv", q.Name, q.Period, u.since.In(time.Local).Format(dateLayout)), b.Bytes())
	return nil
}

// statementCSV downloads an account's statement for a period, as `ingot
// statement ACCOUNT --start FIRST --end DAY-AFTER-LAST --csv` prints it.
func (p *Pages) statementCSV(req *request) error {
	sp, err := decodeStatementQuery(pathStatement, req.r.URL.Query())
	if err != nil {
		return err
	}
	_, settings, err := p.dataPage(req, "")
	if err != nil {
		return err
	}
	st, err := call[api.Statement](req, api.PathStatement, api.StatementQuery{Account: sp.Account, From: sp.From, To: sp.To})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := report.WriteStatement(&b, report.CSV, st.Statement, settings.Precision, false); err != nil {
		return err
	}
	last := sp.To.AddDate(0, 0, -1)
	sendCSV(req, fmt.Sprintf("%s-statement-%s-to-%s.csv", sp.Account, sp.From.Format(dateLayout), last.Format(dateLayout)), b.Bytes())
	return nil
}

// statementView is an account's statement as a page: the summary, the
// credits and the debits, as `ingot statement` prints them, and its CSV.
type statementView struct {
	page
	Statement ledger.Statement
	// First and Last are the period's first and last days; CSV its
	// download.
	First, Last, CSV string
}

// statementPage shows an account's statement for a period, as `ingot
// statement ACCOUNT --start FIRST --end DAY-AFTER-LAST` prints it.
func (p *Pages) statementPage(req *request) error {
	sp, err := decodeStatementQuery(pathStmtPage, req.r.URL.Query())
	if err != nil {
		return err
	}
	pg, _, err := p.dataPage(req, "Statement of "+sp.Account)
	if err != nil {
		return err
	}
	st, err := call[api.Statement](req, api.PathStatement, api.StatementQuery{Account: sp.Account, From: sp.From, To: sp.To})
	if err != nil {
		return err
	}
	v := statementView{page: pg, Statement: st.Statement, First: req.r.URL.Query().Get("from"), Last: req.r.URL.Query().Get("to")}
	v.CSV = pathStatement + "?" + url.Values{"account": {sp.Account}, "from": {v.First}, "to": {v.Last}}.Encode()
	p.render(req, http.StatusOK, "statement", v)
	return nil
}

// sendCSV sends a download. The name is made of a node's name, which the
// bank has checked (letters, digits, '-', '_', '.'), and dates.
func sendCSV(req *request, name string, body []byte) {
	req.w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	req.w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	req.w.WriteHeader(http.StatusOK)
	req.w.Write(body)
}

// nodeURL is the page of a node, with the usage's period, grouping and
// range when they are not the defaults.
func nodeURL(q nodeQuery) string {
	v := url.Values{"name": {q.Name}}
	if q.Period != "" && q.Period != "day" {
		v.Set("period", q.Period)
	}
	if q.By != "" && q.By != "project" {
		v.Set("by", q.By)
	}
	setRange(v, q)
	return pathNode + "?" + v.Encode()
}

// usageURL is the download of a node page's usage table.
func usageURL(q nodeQuery) string {
	v := url.Values{"name": {q.Name}, "period": {q.Period}, "by": {q.By}}
	setRange(v, q)
	return pathUsage + "?" + v.Encode()
}

// setRange adds q's date range, where chosen, to a link's parameters.
func setRange(v url.Values, q nodeQuery) {
	if q.From != "" {
		v.Set("from", q.From)
	}
	if q.To != "" {
		v.Set("to", q.To)
	}
}

// depth is a node's depth in its tree: 0 for an account.
func depth(name string) int { return strings.Count(name, ".") }
