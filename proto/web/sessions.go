package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

const (
	// LinkLifetime is how long a sign-in link may be opened, once.
	LinkLifetime = 5 * time.Minute
	// SessionLifetime is how long a session lasts from its sign-in, at
	// most: it does not grow with use.
	SessionLifetime = 8 * time.Hour
	// LinksPerClient caps the links one client has waiting to be opened.
	// A person needs one, or a few if some went astray; a client asking
	// for more is refused (too_many_requests) until one is used or
	// expires, and no other client is affected.
	LinksPerClient = 20
	// SessionsPerClient caps the sessions signed in as one client. A
	// sign-in beyond it ends that client's oldest session rather than
	// being refused: the one signing in is the person the sessions are
	// of, most likely back in a new browser after leaving old ones signed
	// in, and refusing would lock them out of their own page for up to
	// SessionLifetime. Only the client's own sessions are ended.
	SessionsPerClient = 20
	// maxLinks and maxSessions bound the whole server's tables, a bound on
	// its memory: 500 clients' full shares, so that no one client, nor a
	// few, can fill them.
	maxLinks    = 10000
	maxSessions = 10000
)

// Sessions are the sign-in links made and the sessions signed in, in this
// process's memory (see the package documentation for why); Pages serves
// them, and makes links through them for server.Page's MakeLink.
type Sessions struct {
	base   *url.URL
	secure bool // the base URL is https: cookies are Secure whatever the request
	now    func() time.Time

	mu       sync.Mutex
	links    *table[pending]
	sessions *table[Session]
}

// digest is the SHA-256 of a token: only digests are kept, so that the
// process's memory holds no token that could be replayed.
type digest [sha256.Size]byte

// pending is a link made and not yet opened.
type pending struct {
	client clients.Client
	// csrf is the token of the link's sign-in form, made with the link:
	// the link's page sets it in a cookie and in its form, and the form
	// signs in only with both equal to it, so that a form and a cookie
	// made up elsewhere, or those of another link's page, cannot use the
	// link.
	csrf string
}

// Session is a browser signed in as a client.
type Session struct {
	// Client is the client that asked for the link: the session reads what
	// it reads.
	Client  clients.Client
	Expires time.Time
	// CSRF is the token each of the session's forms carries.
	CSRF string
}

// NewSessions keeps the links and sessions of the page at baseURL (the
// scheme, host and port browsers reach it at: links start with it), with
// the clock now (nil: time.Now).
func NewSessions(baseURL string, now func() time.Time) (*Sessions, error) {
	base, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBaseURL, baseURL, err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.User != nil ||
		(base.Path != "" && base.Path != "/") || base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("%w %q: want http://HOST[:PORT] or https://HOST[:PORT], without a path", ErrBaseURL, baseURL)
	}
	base.Path = ""
	if now == nil {
		now = time.Now
	}
	return &Sessions{base: base, secure: base.Scheme == "https", now: now,
		links: newTable[pending](maxLinks, LinksPerClient), sessions: newTable[Session](maxSessions, SessionsPerClient)}, nil
}

// MakeLink makes a link that signs a browser in as client c, once, within
// LinkLifetime.
func (s *Sessions) MakeLink(_ context.Context, c clients.Client) (api.WebLinkResponse, error) {
	token, d := newToken()
	csrf, _ := newToken()
	now := s.now()
	expires := now.Add(LinkLifetime)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.roomForLink(c, now); err != nil {
		return api.WebLinkResponse{}, err
	}
	s.links.add(d, c.Name, expires, pending{client: c, csrf: csrf})
	link := *s.base
	link.Path = pathSignIn
	link.RawQuery = url.Values{paramToken: {token}}.Encode()
	return api.WebLinkResponse{URL: link.String(), Expires: expires.UTC()}, nil
}

// roomForLink refuses a new link of client c when c has LinksPerClient
// waiting (the client's doing: too_many_requests, with when its oldest
// expires) or the server has maxLinks (unavailable: retry later). The
// caller holds s.mu.
func (s *Sessions) roomForLink(c clients.Client, now time.Time) error {
	if waiting := s.links.owned(c.Name, now); len(waiting) >= s.links.perOwner {
		oldest := s.links.entries[waiting[0]].expires.UTC()
		return api.Errorf(api.CodeTooManyRequests, "web: client %s has %d sign-in links waiting to be opened, the most one client may have: open one, or ask again after %s, when the oldest expires",
			c.Name, len(waiting), oldest.Format(time.RFC3339)).With("limit", s.links.perOwner).With("retry_after", oldest)
	}
	if s.links.full(now) {
		return api.Errorf(api.CodeUnavailable, "web: %d sign-in links are waiting to be opened, the most the server keeps; try again when some have expired (in at most %s)", s.links.max, LinkLifetime)
	}
	return nil
}

// link returns the link of a token if it may still be used, without using
// it: the sign-in page shows its button, whom it signs in as, and the form
// token to send with it.
func (s *Sessions) link(token string) (pending, bool) {
	d, ok := digestOf(token)
	if !ok {
		return pending{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.links.get(d, s.now())
	return e.value, ok
}

// signIn uses a link's token, once, and returns the new session and its
// token, which only the browser's cookie keeps. The form's token (csrf)
// and the cookie's (cookie) must both be the link's (ErrCSRF); a form
// refused so leaves the link as it was, for its owner's own button.
func (s *Sessions) signIn(linkToken, csrf, cookie string) (string, Session, error) {
	d, ok := digestOf(linkToken)
	if !ok {
		return "", Session{}, ErrLinkInvalid
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.links.get(d, now)
	if !ok {
		return "", Session{}, ErrLinkInvalid
	}
	if !sameToken(csrf, e.value.csrf) || !sameToken(cookie, e.value.csrf) {
		return "", Session{}, ErrCSRF
	}
	s.links.remove(d) // once, whatever follows
	c := e.value.client
	if err := s.roomForSession(c, now); err != nil {
		return "", Session{}, err
	}
	token, sd := newToken()
	formToken, _ := newToken()
	sess := Session{Client: c, Expires: now.Add(SessionLifetime), CSRF: formToken}
	s.sessions.add(sd, c.Name, sess.Expires, sess)
	return token, sess, nil
}

// roomForSession makes room for a new session of client c: it ends c's
// oldest sessions while c has SessionsPerClient (see there for why), and
// refuses when the server has maxSessions (unavailable: retry later). The
// caller holds s.mu.
func (s *Sessions) roomForSession(c clients.Client, now time.Time) error {
	for own := s.sessions.owned(c.Name, now); len(own) >= s.sessions.perOwner; own = s.sessions.owned(c.Name, now) {
		s.sessions.remove(own[0])
	}
	if s.sessions.full(now) {
		return api.Errorf(api.CodeUnavailable, "web: %d sessions are signed in, the most the server keeps; try again when some have ended", s.sessions.max)
	}
	return nil
}

// session returns the live session of a cookie's token.
func (s *Sessions) session(token string) (Session, bool) {
	d, ok := digestOf(token)
	if !ok {
		return Session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions.get(d, s.now())
	return e.value, ok
}

// signOut ends the session of a cookie's token.
func (s *Sessions) signOut(token string) {
	if d, ok := digestOf(token); ok {
		s.mu.Lock()
		s.sessions.remove(d)
		s.mu.Unlock()
	}
}

// tokenBytes is a token's length: 256 random bits.
const tokenBytes = 32

// tokenLen is a token's length as text: base64url without padding.
var tokenLen = base64.RawURLEncoding.EncodedLen(tokenBytes)

// newToken returns a new random token, as base64url, and its digest.
func newToken() (string, digest) {
	raw := make([]byte, tokenBytes)
	rand.Read(raw) // never fails (crypto/rand's documentation)
	return base64.RawURLEncoding.EncodeToString(raw), sha256.Sum256(raw)
}

// digestOf is the digest of a token as a browser sends it back; ok is false
// for anything but a token's one canonical form (as newToken writes it).
// The decoder alone is not enough: base64 decoders skip carriage returns
// and newlines, so "\r" inside a token would be another spelling of it.
// Tokens are found by their digest, so the time a lookup takes says
// nothing of the token.
func digestOf(token string) (digest, bool) {
	if len(token) != tokenLen {
		return digest{}, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) != tokenBytes || base64.RawURLEncoding.EncodeToString(raw) != token {
		return digest{}, false
	}
	return sha256.Sum256(raw), true
}

// sameToken compares a token sent with the one expected in constant time.
func sameToken(sent, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(want)) == 1
}
