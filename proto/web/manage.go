package web

import (
	"net/http"
	"regexp"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// A manager's forms change the bank through the API's own handlers, as the
// session's client: the journal has the manager as the actor, and what the
// API refuses the client (a user's session, a node out of its scope) is
// refused with the API's own words, as the command line prints them. Each
// form carries the session's CSRF token, and a request id made with the
// page, so that sending it again (a double click, the back button) is a
// retry of the same change, which the bank makes once.

// membersForm adds a user to a node, or removes them.
type membersForm struct {
	CSRF    string `query:"csrf,required"`
	Request string `query:"request,required"`
	Node    string `query:"node,required"`
	User    string `query:"user,required"`
	Op      string `query:"op,required"`
}

// transferForm moves credits between two accounts the session manages.
type transferForm struct {
	CSRF    string `query:"csrf,required"`
	Request string `query:"request,required"`
	From    string `query:"from,required"`
	To      string `query:"to,required"`
	Amount  string `query:"amount,required"`
}

// policyQuery is a preview of a project's new quota (QUOTA as `ingot
// project policy --quota` takes it).
type policyQuery struct {
	Node  string `query:"node,required"`
	Quota string `query:"quota,required"`
}

// policyForm sets a project's quota: the preview's confirm.
type policyForm struct {
	CSRF    string `query:"csrf,required"`
	Request string `query:"request,required"`
	Node    string `query:"node,required"`
	Quota   string `query:"quota,required"`
}

// refusal is the API's refusal of a form: shown with its own status and
// message, not as "not found" (a form names what it changes; the API's
// message is the command line's).
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// manages reports whether the session's client may use the manager's
// forms (the API still decides each change).
func manages(c *clients.Client) bool {
	return c != nil && (c.Role == clients.RoleManager || c.Role == clients.RoleAdmin)
}

// members adds the user to the node as a member, or removes them.
func (p *Pages) members(req *request) error {
	f, err := postedForm[membersForm](req, pathMembers)
	if err != nil {
		return err
	}
	var change ledger.UserChange
	switch f.Op {
	case "add":
		change.Add = []ledger.Membership{{Node: f.Node, Role: ledger.RoleMember}}
	case "remove":
		change.Remove = []string{f.Node}
	default:
		return api.Errorf(api.CodeInvalid, "%s: op %q: want add or remove", pathMembers, f.Op)
	}
	if _, err := makeChange[ledger.User](req, f.Request, api.PathUserModify, api.Modify[ledger.UserChange]{Name: f.User, Change: change}); err != nil {
		return err
	}
	http.Redirect(req.w, req.r, nodeURL(nodeQuery{Name: f.Node}), http.StatusSeeOther)
	return nil
}

// transfer moves credits from one account to another.
func (p *Pages) transfer(req *request) error {
	f, err := postedForm[transferForm](req, pathTransfer)
	if err != nil {
		return err
	}
	amount, err := ledger.ParseDecimal("amount", f.Amount)
	if err != nil {
		return api.Errorf(api.CodeInvalid, "%s: %v", pathTransfer, err)
	}
	spec := ledger.TransferSpec{From: f.From, To: f.To, Amount: amount, Description: "transfer on the web page"}
	if _, err := makeChange[ledger.Receipt](req, f.Request, api.PathTransfers, spec); err != nil {
		return err
	}
	http.Redirect(req.w, req.r, nodeURL(nodeQuery{Name: f.From}), http.StatusSeeOther)
	return nil
}

// policyView is the preview of a project's new quota: the account's split
// now and as it would be with the quota (GET /v1/shares and its dry run
// with=NODE=QUOTA, as `ingot hfs show ACCOUNT [--with NODE=QUOTA]` prints
// them), node by node, and the form that sets it.
type policyView struct {
	page
	Node, Quota   string
	Before, After ledger.AccountShares
	Rows          []splitRow
	Request       string
	QuotaForm     quotaForm
}

// quotaForm is the form that previews a project's new quota: the
// account's projects, the one chosen and the quota typed.
type quotaForm struct {
	Projects    []string
	Node, Quota string
}

// splitRow is a node's share before and after the change.
type splitRow struct {
	Before, After ledger.NodeShare
	Changed       bool
}

func (p *Pages) policyPreview(req *request) error {
	var q policyQuery
	if err := api.DecodeQuery(pathPolicy, req.r.URL.Query(), &q); err != nil {
		return err
	}
	account := ledger.AccountOf(q.Node)
	pg, _, err := p.dataPage(req, "New quota of "+q.Node)
	if err != nil {
		return err
	}
	v := policyView{page: pg, Node: q.Node, Quota: q.Quota, Request: newRequestID()}
	if v.Before, err = read[ledger.AccountShares](req, api.PathShares, api.SharesQuery{Account: account}); err != nil {
		return err
	}
	if v.After, err = read[ledger.AccountShares](req, api.PathShares, api.SharesQuery{Account: account, With: []string{q.Node + "=" + q.Quota}}); err != nil {
		return err
	}
	if len(v.After.Nodes) != len(v.Before.Nodes) {
		return api.Errorf(api.CodeUnavailable, "%s: %s's tree changed while it was read: preview again", pathPolicy, account)
	}
	for i, b := range v.Before.Nodes {
		a := v.After.Nodes[i] // the same tree, in the same order
		v.Rows = append(v.Rows, splitRow{Before: b, After: a, Changed: !a.Quota.Equal(b.Quota) || !a.Allocated.Equal(b.Allocated) ||
			!a.LienAvailable.Equal(b.LienAvailable) || !a.Available.Equal(b.Available) || a.Policy.QuotaText() != b.Policy.QuotaText()})
	}
	v.QuotaForm = quotaForm{Projects: projectsOf(&v.Before), Node: q.Node, Quota: q.Quota}
	p.render(req, http.StatusOK, "policy", v)
	return nil
}

// projectsOf are the projects of an account's split, whose quotas the
// form sets.
func projectsOf(s *ledger.AccountShares) []string {
	var out []string
	for _, n := range s.Nodes {
		if ledger.ParentOf(n.Name) != "" {
			out = append(out, n.Name)
		}
	}
	return out
}

// setQuota sets a project's quota, its other settings as they are (`ingot
// project policy NODE --quota QUOTA`).
func (p *Pages) setQuota(req *request) error {
	f, err := postedForm[policyForm](req, pathPolicy)
	if err != nil {
		return err
	}
	kind, value, err := ledger.ParseQuota("quota", f.Quota)
	if err != nil {
		return refusal{api.Errorf(api.CodeInvalid, "%s: %v", pathPolicy, err)}
	}
	n, err := read[ledger.Node](req, api.PathNode, api.NameQuery{Name: f.Node})
	if err != nil {
		return err
	}
	policy := n.Policy
	policy.QuotaKind, policy.Quota = kind, value
	change := api.Modify[ledger.NodeChange]{Name: f.Node, Change: ledger.NodeChange{Policy: &policy}}
	if _, err := makeChange[ledger.Node](req, f.Request, api.PathNodeModify, change); err != nil {
		return err
	}
	http.Redirect(req.w, req.r, nodeURL(nodeQuery{Name: f.Node})+"#tree-heading", http.StatusSeeOther)
	return nil
}

// read is call for a manager's form: what the API refuses is a refusal,
// shown with its words.
func read[Out any](req *request, path string, in any) (Out, error) {
	out, err := call[Out](req, path, in)
	return out, refused(err)
}

// refused is err, a refusal where the API refused the request (a status
// below 500).
func refused(err error) error {
	if err != nil && api.FromError(err).Code.Status() < http.StatusInternalServerError {
		return refusal{err}
	}
	return err
}

// makeChange makes a change at path with in, as the session's client,
// under the form's request id (the API's actor: "client:NAME"); what the
// API refuses is a refusal.
func makeChange[Out any](req *request, id, path string, in any) (Out, error) {
	var zero Out
	if !requestID.MatchString(id) {
		return zero, api.Errorf(api.CodeInvalid, "%s: the form's request id is not the page's", req.r.URL.Path)
	}
	out, err := api.CallAs[Out](req.r.Context(), req.bank, req.sess.Client,
		ledger.Request{Actor: "client:" + req.sess.Client.Name, ID: id}, http.MethodPost, path, in)
	return out, refused(err)
}

// requestID is the form of client.NewRequestID's ids.
var requestID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// postedForm reads a manager's form of type F posted to path, and checks
// that it carries the session's CSRF token.
func postedForm[F interface{ token() string }](req *request, path string) (F, error) {
	f, err := decodeForm(req, func(body string) (F, error) {
		var f F
		return f, decodeFormBody(path, body, &f)
	})
	if err == nil && !sameToken(f.token(), req.sess.CSRF) {
		err = ErrCSRF
	}
	return f, err
}

func (f membersForm) token() string  { return f.CSRF }
func (f transferForm) token() string { return f.CSRF }
func (f policyForm) token() string   { return f.CSRF }

// newRequestID is the request id a form is made with.
func newRequestID() string { return client.NewRequestID() }
