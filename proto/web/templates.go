package web

import (
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/forecast"
	"strconv"

	"embed"
	"github.com/ingot-hpc/ingot/ledger"
	"html/template"
	"strings"
)

// The templates and the style sheet are in the binary: the page loads
// nothing from anywhere else.
var (
	//go:embed templates/*.html
	templateFiles embed.FS
	//go:embed static/style.css
	style []byte
)

// parseTemplates parses the page's templates; they are part of the
// binary, so a failure is a bug that every test shows.
func parseTemplates() *template.Template {
	funcs := template.FuncMap{
		"join":      strings.Join,
		"nodeLink":  func(name string) string { return nodeURL(nodeQuery{Name: name}) },
		"depth":     depth,
		"policy":    policyText,
		"beforeEnd": beforeEnd,
		"usedShare": usedShare,
		"lines": func(v statementView, id, title string, lines []ledger.StatementLine) statementLines {
			return statementLines{View: v, ID: id, Title: title, Lines: lines}
		},
	}
	return template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html"))
}

// policyText is a node's HFS policy in words, its settings as `ingot
// hfs show` names them: "dynamic:0.6, accepts surplus, limit 500".
func policyText(p ledger.Policy) string {
	parts := []string{p.QuotaText()}
	if p.AcceptSurplus {
		parts = append(parts, "accepts surplus")
	}
	if p.Limit != nil {
		parts = append(parts, "limit "+p.Limit.String())
	}
	if !p.NonShared.IsZero() {
		parts = append(parts, "non-shared "+p.NonShared.String())
	}
	if !p.Ownership.IsZero() {
		parts = append(parts, "ownership "+p.Ownership.String())
	}
	if !p.GroupNonShared.IsZero() {
		parts = append(parts, "group non-shared "+p.GroupNonShared.String())
	}
	if p.Priority != 0 {
		parts = append(parts, "priority "+strconv.Itoa(p.Priority))
	}
	return strings.Join(parts, ", ")
}

// beforeEnd says how a rate's run-out stands to the allocations' end:
// "12 days before the allocations end"; "" without both.
func beforeEnd(r forecast.Rate) string {
	switch d := r.DaysBeforeEnd; {
	case d == nil:
		return ""
	case *d > 0:
		return fmt.Sprintf("%d days before the allocations end", *d)
	case *d < 0:
		return fmt.Sprintf("%d days after the allocations end", -*d)
	}
	return "the day the allocations end"
}

// usedShare is how much of what was deposited in an allocation is used
// (charged, withdrawn or moved out), as a percentage: "37.5%"; "-" for an
// allocation of credit alone.
func usedShare(a ledger.AllocationStatus) string {
	if !a.Deposited.IsPositive() {
		return "-"
	}
	return a.Deposited.Sub(a.Amount).Mul(decimal.NewFromInt(100)).Div(a.Deposited).StringFixed(1) + "%"
}

// serveStyle sends the style sheet.
func serveStyle(req *request) error {
	req.w.Header().Set("Content-Type", "text/css; charset=utf-8")
	req.w.Write(style)
	return nil
}

// statementLines are a section of a statement's page, its credits or its
// debits.
type statementLines struct {
	View      statementView
	ID, Title string
	Lines     []ledger.StatementLine
}

// errorPage answers a request the page refuses.
type errorPage struct {
	page
	Message string
}

// signInPage is the sign-in page: how to get a link, or a link's button.
type signInPage struct {
	page
	// Token and CSRF are the link's token and the form's own, As the
	// client the link signs in as; Invalid says that the link cannot be
	// used.
	Token, CSRF, As string
	Invalid         bool
}
