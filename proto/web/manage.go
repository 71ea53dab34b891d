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
	if err != nil && api.FromError(err).Code.Status() < http.StatusInternalServerError {
		return out, refusal{err}
	}
	return out, err
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

// newRequestID is the request id a form is made with.
func newRequestID() string { return client.NewRequestID() }
