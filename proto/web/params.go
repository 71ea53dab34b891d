package web

import (
	"net/url"
	"slices"
	"time"

	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
)

// The page's parameters are read as the API reads a query (api.DecodeQuery:
// an unknown, repeated or empty parameter is refused), then checked here.
// A refusal is a 400 page that says why.

// signInQuery is the query of the sign-in link (a token), or none.
type signInQuery struct {
	Token string `query:"token"`
}

func decodeSignInQuery(v url.Values) (signInQuery, error) {
	var q signInQuery
	return q, api.DecodeQuery(pathSignIn, v, &q)
}

// signInForm is what the sign-in button posts.
type signInForm struct {
	Token string `query:"token,required"`
	CSRF  string `query:"csrf,required"`
}

func decodeSignInForm(body string) (signInForm, error) {
	var f signInForm
	return f, decodeFormBody(pathSignIn, body, &f)
}

// signOutForm is what the sign-out button posts.
type signOutForm struct {
	CSRF string `query:"csrf,required"`
}

func decodeSignOutForm(body string) (signOutForm, error) {
	var f signOutForm
	return f, decodeFormBody(pathSignOut, body, &f)
}

// decodeFormBody reads an url-encoded form into f as a query is read.
func decodeFormBody(path, body string, f any) error {
	v, err := url.ParseQuery(body)
	if err != nil {
		return api.Errorf(api.CodeInvalid, "%s: the form: %v", path, err)
	}
	return api.DecodeQuery(path, v, f)
}

// usageBys are the ways the page groups usage: by project (a node's
// subtree has several), by user or by machine (lien.UsageKeys).
var usageBys = lien.UsageKeys

// nodeQuery is the query of a node's page and of its usage download: the
// node, the usage's period (default day) and grouping (default project),
// and the first and last days of its range (default: the chart's periods
// up to now, from the first with charges). FromDay and ToDay are the
// range's midnights (see dateRange), zero where not given.
type nodeQuery struct {
	Name   string `query:"name,required"`
	Period string `query:"period"`
	By     string `query:"by"`
	From   string `query:"from"`
	To     string `query:"to"`

	FromDay, ToDay time.Time
}

func decodeNodeQuery(path string, v url.Values) (nodeQuery, error) {
	q := nodeQuery{}
	if err := api.DecodeQuery(path, v, &q); err != nil {
		return nodeQuery{}, err
	}
	if q.Period == "" {
		q.Period = "day"
	}
	if q.By == "" {
		q.By = "project"
	}
	if !slices.Contains(lien.UsagePeriods, q.Period) {
		return nodeQuery{}, api.Errorf(api.CodeInvalid, "%s: period %q: want day, week or month", path, q.Period)
	}
	if !slices.Contains(usageBys, q.By) {
		return nodeQuery{}, api.Errorf(api.CodeInvalid, "%s: by %q: want project, user or machine", path, q.By)
	}
	var err error
	q.FromDay, q.ToDay, err = dateRange(path, q.From, q.To)
	return q, err
}

// errRange refuses a date range of more than maxSlots periods.
func errRange(period string) error {
	return api.Errorf(api.CodeInvalid, "%s: the range has more than %d %ss: choose a shorter range or a longer period", pathNode, maxSlots, period)
}

// statementQuery is the query of a statement download: the account and
// its first and last days, as the form's date fields send them.
type statementQuery struct {
	Account string `query:"account,required"`
	From    string `query:"from,required"`
	To      string `query:"to,required"`
}

// statementPeriod is a statement's account and period [From, To): from
// the first day's midnight to the midnight after the last day, in the
// server's zone (the command line reads dates so too).
type statementPeriod struct {
	Account  string
	From, To time.Time
}

// dateLayout is the form of the date fields (ISO 8601, whatever the
// browser's locale).
const dateLayout = "2006-01-02"

// timeLayout shows a time to the minute with its zone's name.
const timeLayout = "2006-01-02 15:04 MST"

// earliest is the first day a statement may start: the bank refuses times
// before 1970 as typos, and so does the page.
var earliest = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

func decodeStatementQuery(path string, v url.Values) (statementPeriod, error) {
	var q statementQuery
	if err := api.DecodeQuery(path, v, &q); err != nil {
		return statementPeriod{}, err
	}
	from, to, err := dateRange(path, q.From, q.To)
	return statementPeriod{Account: q.Account, From: from, To: to}, err
}

// dateRange reads the first and last days of a range (either may be "":
// open on that side, a zero time) as the date fields send them, and
// returns the first day's midnight and the midnight after the last day,
// in the server's zone (the command line reads dates so too).
func dateRange(path, first, last string) (from, to time.Time, err error) {
	if first != "" {
		if from, err = time.ParseInLocation(dateLayout, first, time.Local); err != nil {
			return from, to, api.Errorf(api.CodeInvalid, "%s: from %q is not a date such as 2026-11-01", path, first)
		}
		if from.Before(earliest) {
			return from, to, api.Errorf(api.CodeInvalid, "%s: from %s is before 1970", path, first)
		}
	}
	if last != "" {
		day, err := time.ParseInLocation(dateLayout, last, time.Local)
		if err != nil {
			return from, to, api.Errorf(api.CodeInvalid, "%s: to %q is not a date such as 2026-11-30", path, last)
		}
		if day.Before(from) {
			return from, to, api.Errorf(api.CodeInvalid, "%s: the last day %s is before the first %s", path, last, first)
		}
		to = day.AddDate(0, 0, 1)
	}
	return from, to, nil
}
