package web

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// The page's paths. Every other path is 404.
const (
	pathHome      = "/"
	pathNode      = "/node"
	pathStatement = "/statement.csv"
	pathStmtPage  = "/statement"
	pathMembers   = "/members"
	pathTransfer  = "/transfer"
	pathPolicy    = "/policy"
	pathUsage     = "/usage.csv"
	pathSignIn    = "/signin"
	pathSignOut   = "/signout"
	pathStyle     = "/style.css"
)

// The parameters of the sign-in link and the forms.
const (
	paramToken = "token"
	paramCSRF  = "csrf"
)

// The cookies: the session's, and the sign-in form's own CSRF token. Where
// they are Secure their names have the prefix hostPrefix (see cookieName).
const (
	cookieSession = "ingot_session"
	cookieSignIn  = "ingot_signin"
	hostPrefix    = "__Host-"
)

// maxForm bounds a form's body: the forms hold two tokens.
const maxForm = 4096

// Pages is the web page of a bank, served by server.Server (WithPage).
type Pages struct {
	sessions *Sessions
	log      *slog.Logger
	tmpl     *template.Template
	routes   map[string]route
}

// route is one path of the page: its method, and whether it is served to
// a browser that has not signed in.
type route struct {
	method string
	public bool
	serve  func(*request) error
}

// request is one request for the page, of the session sess (zero on a
// public path), reading the bank through bank.
type request struct {
	w    http.ResponseWriter
	r    *http.Request
	bank api.Caller
	sess Session
}

// New returns the page, whose links and sessions are sessions', logging
// its failures to log. It is served by a server.Server (WithPage), which
// hands it the bank to read at each request.
func New(sessions *Sessions, log *slog.Logger) *Pages {
	p := &Pages{sessions: sessions, log: log, tmpl: parseTemplates()}
	p.routes = map[string]route{
		pathHome:      {method: http.MethodGet, serve: p.home},
		pathNode:      {method: http.MethodGet, serve: p.node},
		pathStatement: {method: http.MethodGet, serve: p.statementCSV},
		pathStmtPage:  {method: http.MethodGet, serve: p.statementPage},
		pathMembers:   {method: http.MethodPost, serve: p.members},
		pathTransfer:  {method: http.MethodPost, serve: p.transfer},
		// GET previews a project's new quota, POST (its confirm) sets it.
		pathPolicy:  {serve: byMethod(p.policyPreview, p.setQuota)},
		pathUsage:   {method: http.MethodGet, serve: p.usageCSV},
		pathSignOut: {method: http.MethodPost, serve: p.signOut},
		pathStyle:   {method: http.MethodGet, public: true, serve: serveStyle},
		// The sign-in path has two methods: GET shows the link's page,
		// POST (its button) signs in.
		pathSignIn: {public: true, serve: byMethod(p.signInPage, p.signInForm)},
	}
	return p
}

// MakeLink makes a link that signs a browser in as client c (see
// Sessions.MakeLink).
func (p *Pages) MakeLink(ctx context.Context, c clients.Client) (api.WebLinkResponse, error) {
	return p.sessions.MakeLink(ctx, c)
}

// Serves reports whether path is one of the page's.
func (p *Pages) Serves(path string) bool {
	_, ok := p.routes[path]
	return ok
}

// ServePage answers a request for the page, reading the bank through
// bank (server.Server.Call) as the session's client, and returns the
// client's name.
func (p *Pages) ServePage(w http.ResponseWriter, r *http.Request, bank api.Caller) string {
	securityHeaders(w.Header())
	rt, ok := p.routes[r.URL.Path]
	req := &request{w: w, r: r, bank: bank}
	switch {
	case !ok:
		p.fail(req, errNotFound)
		return ""
	case rt.method != "" && r.Method != rt.method:
		w.Header().Set("Allow", rt.method)
		p.fail(req, api.Errorf(api.CodeMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, rt.method))
		return ""
	case !rt.public:
		sess, ok := p.signedIn(r)
		if !ok {
			// Not signed in, or the session ended: the sign-in page says
			// how to sign in.
			http.Redirect(w, r, pathSignIn, http.StatusSeeOther)
			return ""
		}
		req.sess = sess
	}
	if err := rt.serve(req); err != nil {
		p.fail(req, err)
	}
	return req.sess.Client.Name
}

// securityHeaders are sent with every answer of the page: no script runs
// (there is none), nothing is loaded but from the page itself, no other
// site may frame it, and no Referer leaves it (a sign-in link in one
// would be a secret sent elsewhere, were it not used already).
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// signedIn returns the session of the request's cookie, if it is live.
func (p *Pages) signedIn(r *http.Request) (Session, bool) {
	return p.sessions.session(p.cookieValue(r, cookieSession))
}

// errNotFound answers a path that is not the page's, and anything the
// session may not read: whether another project exists is not told.
var errNotFound = api.Errorf(api.CodeNotFound, "not found")

// fail answers an error: 404 for what does not exist or the session may
// not read (the same page, so that a refusal does not say that the node
// exists), 400 for bad parameters with the reason, 500 otherwise with the
// cause in the log.
func (p *Pages) fail(req *request, err error) {
	e := api.FromError(err)
	status, title, message := e.Code.Status(), "", e.Message
	switch {
	case errors.Is(err, ErrCSRF):
		status, title, message = http.StatusForbidden, "Refused", ErrCSRF.Error()
	case errors.As(err, new(refusal)) && status < http.StatusInternalServerError:
		title = "Refused"
	case e.Code == api.CodeNotFound || e.Code == api.CodeForbidden:
		status, title, message = http.StatusNotFound, "Not found", "There is no such page, or it shows what this session may not read."
	case status >= 500:
		p.log.Error("web page failed", "method", req.r.Method, "path", req.r.URL.Path, "error", err.Error())
	}
	data := errorPage{page: p.pageOf(req, cmp.Or(title, http.StatusText(status))), Message: message}
	p.render(req, status, "error", data)
}

// render executes template name with data and sends it. The page is made
// whole before it is sent, so that a failure is answered as one.
func (p *Pages) render(req *request, status int, name string, data any) {
	var b bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		p.log.Error("web page failed", "method", req.r.Method, "path", req.r.URL.Path, "template", name, "error", err.Error())
		http.Error(req.w, "internal server error (the server's log has the cause)", http.StatusInternalServerError)
		return
	}
	req.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	req.w.WriteHeader(status)
	req.w.Write(b.Bytes())
}

// byMethod serves a path of two methods: GET with get, POST with post.
func byMethod(get, post func(*request) error) func(*request) error {
	return func(req *request) error {
		switch req.r.Method {
		case http.MethodGet:
			return get(req)
		case http.MethodPost:
			return post(req)
		}
		req.w.Header().Set("Allow", "GET, POST")
		return api.Errorf(api.CodeMethodNotAllowed, "%s %s: use GET or POST", req.r.Method, req.r.URL.Path)
	}
}

// signInPage shows the button that signs in with the link's token. It does
// not use the token: a program that follows links to preview them (a chat
// client, a mail scanner) must not use up the link. The form carries a
// token of its own, made with the link, also set as a cookie only this
// site's pages send back (double submit), so that another site cannot post
// a link of its own maker's here and sign the browser in as someone else;
// the token being the link's, a cookie and a form made up elsewhere, or
// those of another link's page, do not sign in either. The page names the
// client the link signs in as, so that a person sent someone else's link
// sees it before pressing the button.
func (p *Pages) signInPage(req *request) error {
	q, err := decodeSignInQuery(req.r.URL.Query())
	if err != nil {
		return err
	}
	data := signInPage{page: p.pageOf(req, "Sign in")}
	if q.Token == "" {
		p.render(req, http.StatusOK, "signin", data)
		return nil
	}
	l, ok := p.sessions.link(q.Token)
	if !ok {
		data.Invalid = true
		p.render(req, http.StatusForbidden, "signin", data)
		return nil
	}
	data.Token, data.CSRF, data.As = q.Token, l.csrf, l.client.Name
	http.SetCookie(req.w, p.cookie(req.r, cookieSignIn, l.csrf, LinkLifetime))
	p.render(req, http.StatusOK, "signin", data)
	return nil
}

// signInForm uses the link's token and sets the session's cookie.
func (p *Pages) signInForm(req *request) error {
	f, err := decodeForm(req, decodeSignInForm)
	if err != nil {
		return err
	}
	token, _, err := p.sessions.signIn(f.Token, f.CSRF, p.cookieValue(req.r, cookieSignIn))
	if errors.Is(err, ErrLinkInvalid) {
		p.render(req, http.StatusForbidden, "signin", signInPage{page: p.pageOf(req, "Sign in"), Invalid: true})
		return nil
	}
	if err != nil {
		return err
	}
	http.SetCookie(req.w, p.cookie(req.r, cookieSignIn, "", -1))
	http.SetCookie(req.w, p.cookie(req.r, cookieSession, token, SessionLifetime))
	http.Redirect(req.w, req.r, pathHome, http.StatusSeeOther)
	return nil
}

// signOut ends the session on the server and clears its cookie.
func (p *Pages) signOut(req *request) error {
	f, err := decodeForm(req, decodeSignOutForm)
	if err != nil {
		return err
	}
	if !sameToken(f.CSRF, req.sess.CSRF) {
		return ErrCSRF
	}
	p.sessions.signOut(p.cookieValue(req.r, cookieSession)) // there, or the session would not be
	http.SetCookie(req.w, p.cookie(req.r, cookieSession, "", -1))
	http.Redirect(req.w, req.r, pathSignIn, http.StatusSeeOther)
	return nil
}

// cookie is one of the page's cookies: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it, so a cookie is of no use
// to a request another site makes), Path=/, Secure over TLS or when links
// are https (behind a proxy that ends TLS), named by cookieName; maxAge < 0
// deletes it.
func (p *Pages) cookie(r *http.Request, name, value string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{Name: p.cookieName(r, name), Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: p.secure(r)}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge.Seconds())
		c.Expires = time.Now().Add(maxAge).UTC()
	}
	return c
}

// secure reports whether the page's cookies are Secure on request r: over
// TLS, or when links are https (behind a proxy that ends TLS).
func (p *Pages) secure(r *http.Request) bool { return r.TLS != nil || p.sessions.secure }

// cookieName is the name of cookie name on request r: where cookies are
// Secure it has the prefix __Host-, which browsers take only from this very
// host, over TLS, with Path=/ and no Domain. A page of a sibling host
// (people.example.org beside bank.example.org) is same-site, so
// SameSite=Strict does not stop its requests; without the prefix it could
// also set a cookie for the whole domain, its own sign-in form token or its
// own session, and sign a browser in here as itself.
func (p *Pages) cookieName(r *http.Request, name string) string {
	if p.secure(r) {
		return hostPrefix + name
	}
	return name
}

// cookieValue is the value of cookie name (see cookieName) on request r, ""
// if it has none.
func (p *Pages) cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(p.cookieName(r, name))
	if err != nil {
		return ""
	}
	return c.Value
}

// decodeForm reads a POST's form (url-encoded, at most maxForm bytes) with
// decode; a form that cannot be read is refused as invalid.
func decodeForm[F any](req *request, decode func(body string) (F, error)) (F, error) {
	var zero F
	if req.r.URL.RawQuery != "" {
		return zero, api.Errorf(api.CodeInvalid, "%s: a form takes no query", req.r.URL.Path)
	}
	req.r.Body = http.MaxBytesReader(req.w, req.r.Body, maxForm)
	var b bytes.Buffer
	if _, err := b.ReadFrom(req.r.Body); err != nil {
		return zero, api.Errorf(api.CodeInvalid, "%s: reading the form: %v", req.r.URL.Path, err)
	}
	if ct, _, _ := mime.ParseMediaType(req.r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return zero, api.Errorf(api.CodeInvalid, "%s: the form must be application/x-www-form-urlencoded", req.r.URL.Path)
	}
	return decode(b.String())
}
