package web_test

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
	"github.com/ingot-hpc/ingot/proto/web"
)

// TestLinkWorksOnce: a link signs one browser in; the same link opened
// again, or its token posted again, is refused and signs nobody in.
func TestLinkWorksOnce(t *testing.T) {
	s := newSite(t)
	link := s.link("amy")
	if !strings.HasPrefix(link, s.url+"/signin?token=") {
		t.Fatalf("link %q", link)
	}
	first := s.browser()
	page := first.get(link)
	// Opening the link twice (a preview, then the person) uses nothing.
	second := s.browser()
	again := second.get(link)
	if again.status != http.StatusOK || !strings.Contains(again.body, "Sign in</button>") {
		t.Fatalf("the link opened a second time before its button: %d\n%s", again.status, again.body)
	}
	token, csrf := hidden(t, page.body, "token"), hidden(t, page.body, "csrf")
	if a := first.post("/signin", url.Values{"token": {token}, "csrf": {csrf}}); a.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", a.status, a.body)
	}
	if home := first.get("/"); home.status != http.StatusOK || !strings.Contains(home.body, "Signed in as <strong>amy</strong>") {
		t.Fatalf("home after sign-in: %d\n%s", home.status, home.body)
	}
	// The token again, from the same browser or another: refused.
	if a := first.post("/signin", url.Values{"token": {token}, "csrf": {csrf}}); a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) > 0 {
		t.Errorf("the token posted again: %d %v", a.status, a.header.Values("Set-Cookie"))
	}
	// The second browser's button, pressed after the first's: the link
	// is used.
	a := second.post("/signin", url.Values{"token": {hidden(t, again.body, "token")}, "csrf": {hidden(t, again.body, "csrf")}})
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "was used already") || len(a.header.Values("Set-Cookie")) > 0 {
		t.Errorf("the link's button pressed a second time: %d %v\n%s", a.status, a.header.Values("Set-Cookie"), a.body)
	}
	other := s.browser()
	if a := other.get(link); a.status != http.StatusForbidden || strings.Contains(a.body, "Sign in</button>") {
		t.Errorf("the used link opened: %d\n%s", a.status, a.body)
	}
	if a := other.get("/"); a.status != http.StatusSeeOther {
		t.Errorf("another browser reads the page: %d", a.status)
	}
}

// TestLinkExpires: a link is refused five minutes after it was made.
func TestLinkExpires(t *testing.T) {
	s := newSite(t)
	b := s.browser()
	link := s.link("amy")
	page := b.get(link)
	s.Clock.Advance(web.LinkLifetime)
	if a := b.get(link); a.status != http.StatusForbidden {
		t.Errorf("an expired link opened: %d", a.status)
	}
	a := b.post("/signin", url.Values{"token": {hidden(t, page.body, "token")}, "csrf": {hidden(t, page.body, "csrf")}})
	if a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) > 0 {
		t.Errorf("an expired link signed in: %d %v", a.status, a.header.Values("Set-Cookie"))
	}
	// Just before its end, a link works.
	link = s.link("amy")
	s.Clock.Advance(web.LinkLifetime - time.Second)
	s.browser().signIn(link)
}

// TestSessionExpires: a session ends eight hours after sign-in, however
// much it is used.
func TestSessionExpires(t *testing.T) {
	s := newSite(t)
	b := s.signedIn("amy")
	s.Clock.Advance(web.SessionLifetime - time.Minute)
	if a := b.get("/"); a.status != http.StatusOK {
		t.Fatalf("a session before its end: %d", a.status)
	}
	s.Clock.Advance(time.Minute)
	if a := b.get("/"); a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin" {
		t.Errorf("a session after its end: %d %q", a.status, a.header.Get("Location"))
	}
}

// TestCookieAttributes: the page's cookies are HttpOnly, SameSite=Strict,
// Path=/, the session's lasts the session; over TLS or when links are
// https they are Secure and named with the prefix __Host-, and cookies
// without it (as a sibling host could set for the whole domain) are not
// read.
func TestCookieAttributes(t *testing.T) {
	s := newSite(t)
	b := s.browser()
	page := b.get(s.link("amy"))
	signInCookie := cookieNamed(t, page.header, "ingot_signin")
	if !signInCookie.HttpOnly || signInCookie.SameSite != http.SameSiteStrictMode || signInCookie.Path != "/" || signInCookie.Secure {
		t.Errorf("sign-in form's cookie: %+v", signInCookie)
	}
	a := b.post("/signin", url.Values{"token": {hidden(t, page.body, "token")}, "csrf": {hidden(t, page.body, "csrf")}})
	c := cookieNamed(t, a.header, "ingot_session")
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge != int(web.SessionLifetime.Seconds()) || len(c.Value) != 43 {
		t.Errorf("session cookie: %+v", c)
	}
	if cookieNamed(t, a.header, "ingot_signin").MaxAge >= 0 {
		t.Errorf("the sign-in form's cookie is kept after sign-in")
	}

	// Over TLS, and with an https base URL behind a proxy: Secure.
	for _, tc := range []struct {
		name, base string
		tls        bool
	}{{"TLS", "http://bank.example", true}, {"https links", "https://bank.example", false}} {
		t.Run(tc.name, func(t *testing.T) {
			sessions, err := web.NewSessions(tc.base, s.Clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			pages := web.New(sessions, nil)
			link, err := pages.MakeLink(t.Context(), clients.Client{Name: "amy", Role: clients.RoleUser, Scope: []string{"amy"}})
			if err != nil {
				t.Fatal(err)
			}
			serve := func(r *http.Request, cookies ...*http.Cookie) *http.Response {
				if tc.tls {
					r.TLS = &tls.ConnectionState{}
				}
				for _, c := range cookies {
					r.AddCookie(c)
				}
				w := httptest.NewRecorder()
				pages.ServePage(w, r, nil)
				return w.Result()
			}
			page := serve(httptest.NewRequest(http.MethodGet, link.URL, nil))
			body, _ := io.ReadAll(page.Body)
			signIn := cookieNamed(t, page.Header, "__Host-ingot_signin")
			if !signIn.Secure || signIn.Path != "/" || signIn.Domain != "" {
				t.Errorf("sign-in form's cookie %+v", signIn)
			}
			form := url.Values{"token": {hidden(t, string(body), "token")}, "csrf": {hidden(t, string(body), "csrf")}}
			post := func(c *http.Cookie) *http.Response {
				r := httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader(form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				return serve(r, c)
			}
			// The form's cookie without the prefix: not the page's.
			if a := post(&http.Cookie{Name: "ingot_signin", Value: signIn.Value}); a.StatusCode != http.StatusForbidden {
				t.Errorf("a sign-in with the cookie ingot_signin: %d %v", a.StatusCode, a.Header.Values("Set-Cookie"))
			}
			a := post(signIn)
			session := cookieNamed(t, a.Header, "__Host-ingot_session")
			if a.StatusCode != http.StatusSeeOther || !session.Secure || session.Path != "/" || session.Domain != "" {
				t.Fatalf("sign in: %d, cookie %+v", a.StatusCode, session)
			}
			if a := serve(httptest.NewRequest(http.MethodGet, "/", nil), &http.Cookie{Name: "ingot_session", Value: session.Value}); a.StatusCode != http.StatusSeeOther {
				t.Errorf("the session's token in the cookie ingot_session reads the page: %d", a.StatusCode)
			}
		})
	}
}

func cookieNamed(t *testing.T, h http.Header, name string) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cookie %s in %v", name, h.Values("Set-Cookie"))
	return nil
}

// TestSignOut: signing out ends the session on the server: its cookie,
// sent again, signs nobody in.
func TestSignOut(t *testing.T) {
	s := newSite(t)
	b := s.signedIn("amy")
	home := b.get("/")
	u, _ := url.Parse(s.url)
	old := b.client.Jar.Cookies(u)
	a := b.post("/signout", url.Values{"csrf": {hidden(t, home.body, "csrf")}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin" || cookieNamed(t, a.header, "ingot_session").MaxAge >= 0 {
		t.Fatalf("sign out: %d %q %v", a.status, a.header.Get("Location"), a.header.Values("Set-Cookie"))
	}
	stolen := s.browser()
	stolen.client.Jar.SetCookies(u, old)
	if a := stolen.get("/"); a.status != http.StatusSeeOther {
		t.Errorf("the cookie of a session signed out still reads the page: %d", a.status)
	}
}

// TestCSRF: a form without the token of the page that showed it is
// refused and changes nothing.
func TestCSRF(t *testing.T) {
	s := newSite(t)
	b := s.signedIn("amy")
	home := b.get("/")
	for _, form := range []url.Values{{}, {"csrf": {"x"}}, {"csrf": {strings.Repeat("A", 43)}}} {
		a := b.post("/signout", form)
		if a.status != http.StatusForbidden && a.status != http.StatusBadRequest {
			t.Errorf("sign out with %v: %d", form, a.status)
		}
	}
	if a := b.get("/"); a.status != http.StatusOK {
		t.Fatalf("the session ended without its token: %d", a.status)
	}
	// Another browser's session token does not sign this one out.
	other := s.signedIn("bob")
	if a := b.post("/signout", url.Values{"csrf": {hidden(t, other.get("/").body, "csrf")}}); a.status != http.StatusForbidden {
		t.Errorf("sign out with another session's token: %d", a.status)
	}
	if a := b.get("/"); a.status != http.StatusOK || hidden(t, a.body, "csrf") != hidden(t, home.body, "csrf") {
		t.Fatalf("the session ended with another's token: %d", a.status)
	}

	// The sign-in button from another site: the form's cookie is not
	// sent, the token does not sign in, and the link still works after.
	link := s.link("amy")
	page := s.browser().get(link)
	forged := s.browser()
	a := forged.post("/signin", url.Values{"token": {hidden(t, page.body, "token")}, "csrf": {hidden(t, page.body, "csrf")}})
	if a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) > 0 {
		t.Errorf("a sign-in without the form's cookie: %d %v", a.status, a.header.Values("Set-Cookie"))
	}
	s.browser().signIn(link)
}

// TestSignInFormBoundToLink: the sign-in form's token is the link's own.
// A form and cookie made up to match (as a sibling host, same-site, that
// can set cookies for the whole domain would send), or the token of
// another link's page, do not sign the browser in as the link's maker;
// the link is left for its own page's button.
func TestSignInFormBoundToLink(t *testing.T) {
	s := newSite(t)
	u, _ := url.Parse(s.url)
	bobs := s.link("bob") // the maker of the forged form
	victim := s.browser()
	madeUp := strings.Repeat("A", 43) // a token's form
	victim.client.Jar.SetCookies(u, []*http.Cookie{{Name: "ingot_signin", Value: madeUp, Path: "/"}})
	token := strings.TrimPrefix(bobs, s.url+"/signin?token=")
	if a := victim.post("/signin", url.Values{"token": {token}, "csrf": {madeUp}}); a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) > 0 {
		t.Errorf("a made-up form token and cookie: %d %v", a.status, a.header.Values("Set-Cookie"))
	}
	// The victim's own link's page, open: its form token and cookie are
	// of that link, not of bob's.
	own := victim.get(s.link("amy"))
	if !strings.Contains(own.body, "as <strong>amy</strong>") {
		t.Errorf("the link's page does not say whom it signs in as:\n%s", own.body)
	}
	if a := victim.post("/signin", url.Values{"token": {token}, "csrf": {hidden(t, own.body, "csrf")}}); a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) > 0 {
		t.Errorf("another link's form token and cookie: %d %v", a.status, a.header.Values("Set-Cookie"))
	}
	if a := victim.get("/"); a.status != http.StatusSeeOther {
		t.Fatalf("the victim's browser is signed in: %d", a.status)
	}
	s.browser().signIn(bobs)
}

// TestSignInRequired: every path but the sign-in page and the style sheet
// needs a session; without one, the sign-in page says what to run.
func TestSignInRequired(t *testing.T) {
	s := newSite(t)
	b := s.browser()
	for _, path := range []string{"/", "/node?name=chem.lab1", "/statement.csv?account=chem&from=2026-01-01&to=2026-01-31",
		"/usage.csv?name=chem.lab1"} {
		if a := b.get(path); a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin" {
			t.Errorf("GET %s without a session: %d %q", path, a.status, a.header.Get("Location"))
		}
	}
	// A path that is none of the page's is not found, signed in or not.
	if a := b.get("/nothing"); a.status != http.StatusNotFound {
		t.Errorf("GET /nothing without a session: %d", a.status)
	}
	if a := b.post("/signout", url.Values{}); a.status != http.StatusSeeOther {
		t.Errorf("POST /signout without a session: %d", a.status)
	}
	a := b.get("/signin")
	if a.status != http.StatusOK || !strings.Contains(a.body, "ingot web-login") || strings.Contains(a.body, "<form") {
		t.Errorf("the sign-in page: %d\n%s", a.status, a.body)
	}
	if a := b.get("/style.css"); a.status != http.StatusOK || a.header.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(a.body, ".grid") {
		t.Errorf("the style sheet: %d %q", a.status, a.header.Get("Content-Type"))
	}
	// The API beside the page is the API's: JSON, signed.
	if a := b.get("/v1/balances"); a.status != http.StatusUnauthorized || !strings.Contains(a.body, `"code":"unauthenticated"`) {
		t.Errorf("/v1/balances from a browser: %d %s", a.status, a.body)
	}
}

// TestSecurityHeaders: every answer of the page, public or not, refused or
// not, forbids scripts, framing, sniffing and Referers.
func TestSecurityHeaders(t *testing.T) {
	s := newSite(t)
	s.seed(2)
	b := s.signedIn("amy")
	for _, path := range []string{"/signin", "/style.css", "/", "/node?name=chem.lab1", "/node?name=bio", "/node", "/nothing", "/usage.csv?name=chem.lab1"} {
		a := b.get(path)
		csp := a.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'none'") ||
			a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s (%d): headers %v", path, a.status, a.header)
		}
		if strings.Contains(a.body, "<script") || strings.Contains(a.body, " style=") {
			t.Errorf("GET %s has a script or an inline style", path)
		}
	}
	if a := b.get("/"); !strings.Contains(a.body, `<html lang="en">`) || !strings.Contains(a.body, `name="viewport"`) {
		t.Errorf("the page has no lang or viewport")
	}
}

// TestWebLinkEndpoint: who may ask for a link, and a server without the
// page has no such endpoint.
func TestWebLinkEndpoint(t *testing.T) {
	s := newSite(t)
	for _, name := range []string{"root", "chemmgr", "amy"} {
		s.link(name)
	}
	c, err := client.New(s.url, s.keys["sched"], client.WithClock(s.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WebLink(t.Context()); !client.IsCode(err, api.CodeForbidden) {
		t.Errorf("a scheduler's link: %v", err)
	}
	v := &auth.Verifier{Lookup: server.KeyLookup(s.reg), Now: s.Clock.Now}
	apiOnly := server.New(s.Ledger, s.lb, s.reg, v, slog.New(slog.DiscardHandler))
	r := httptest.NewRequest(http.MethodPost, api.PathWebLinks, strings.NewReader("{}"))
	if err := auth.Sign(r, []byte("{}"), s.keys["amy"], s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	apiOnly.ServeHTTP(w, r)
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), string(api.CodeUnknownEndpoint)) {
		t.Errorf("a link from a server without the page: %d %s", w.Code, w.Body)
	}
}
