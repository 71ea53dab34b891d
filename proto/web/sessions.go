package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"maps"
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
	// maxWaiting bounds the links not yet opened and the sessions alive,
	// each: what a client asking for links in a loop can make the server
	// hold.
	maxWaiting = 10000
)

// Sessions are the sign-in links made and the sessions signed in, in this
// process's memory (see the package documentation for why). It implements
// server.WebLinks.
type Sessions struct {
	base   *url.URL
	secure bool // the base URL is https: cookies are Secure whatever the request
	now    func() time.Time

	mu       sync.Mutex
	links    map[digest]pending
	sessions map[digest]Session
}

// digest is the SHA-256 of a token: only digests are kept, so that the
// process's memory holds no token that could be replayed.
type digest [sha256.Size]byte

// pending is a link made and not yet opened.
type pending struct {
	client  clients.Client
	expires time.Time
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
	return &Sessions{base: base, secure: base.Scheme == "https", now: now, links: map[digest]pending{}, sessions: map[digest]Session{}}, nil
}

// MakeLink makes a link that signs a browser in as client c, once, within
// LinkLifetime.
func (s *Sessions) MakeLink(_ context.Context, c clients.Client) (api.WebLinkResponse, error) {
	token, d := newToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(now)
	if len(s.links) >= maxWaiting {
		return api.WebLinkResponse{}, api.Errorf(api.CodeUnavailable, "web: %d sign-in links are waiting to be opened; try again when some have expired (in at most %s)", maxWaiting, LinkLifetime)
	}
	p := pending{client: c, expires: now.Add(LinkLifetime)}
	s.links[d] = p
	link := *s.base
	link.Path = pathSignIn
	link.RawQuery = url.Values{paramToken: {token}}.Encode()
	return api.WebLinkResponse{URL: link.String(), Expires: p.expires.UTC()}, nil
}

// valid reports whether a link's token may still be used, without using
// it: the sign-in page says so before its button is pressed.
func (s *Sessions) valid(token string) bool {
	d, ok := digestOf(token)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.links[d]
	return ok && s.now().Before(p.expires)
}

// signIn uses a link's token, once, and returns the new session and its
// token, which only the browser's cookie keeps.
func (s *Sessions) signIn(linkToken string) (string, Session, error) {
	d, ok := digestOf(linkToken)
	if !ok {
		return "", Session{}, ErrLinkInvalid
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(now)
	p, ok := s.links[d]
	if !ok {
		return "", Session{}, ErrLinkInvalid
	}
	delete(s.links, d) // once, whatever follows
	if len(s.sessions) >= maxWaiting {
		return "", Session{}, api.Errorf(api.CodeUnavailable, "web: %d sessions are signed in; try again when some have ended", maxWaiting)
	}
	token, sd := newToken()
	csrf, _ := newToken()
	sess := Session{Client: p.client, Expires: now.Add(SessionLifetime), CSRF: csrf}
	s.sessions[sd] = sess
	return token, sess, nil
}

// session returns the live session of a cookie's token.
func (s *Sessions) session(token string) (Session, bool) {
	d, ok := digestOf(token)
	if !ok {
		return Session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[d]
	if ok && !s.now().Before(sess.Expires) {
		delete(s.sessions, d)
		return Session{}, false
	}
	return sess, ok
}

// signOut ends the session of a cookie's token.
func (s *Sessions) signOut(token string) {
	if d, ok := digestOf(token); ok {
		s.mu.Lock()
		delete(s.sessions, d)
		s.mu.Unlock()
	}
}

// prune drops the links and sessions that have expired. The caller holds
// s.mu.
func (s *Sessions) prune(now time.Time) {
	maps.DeleteFunc(s.links, func(_ digest, p pending) bool { return !now.Before(p.expires) })
	maps.DeleteFunc(s.sessions, func(_ digest, sess Session) bool { return !now.Before(sess.Expires) })
}

// tokenBytes is a token's length: 256 random bits.
const tokenBytes = 32

// newToken returns a new random token, as base64url, and its digest.
func newToken() (string, digest) {
	raw := make([]byte, tokenBytes)
	rand.Read(raw) // never fails (crypto/rand's documentation)
	return base64.RawURLEncoding.EncodeToString(raw), sha256.Sum256(raw)
}

// digestOf is the digest of a token as a browser sends it back; ok is false
// for anything that is not a token's form. Tokens are found by their
// digest, so the time a lookup takes says nothing of the token.
func digestOf(token string) (digest, bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) != tokenBytes {
		return digest{}, false
	}
	return sha256.Sum256(raw), true
}

// sameToken compares a token sent with the one expected in constant time.
func sameToken(sent, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(want)) == 1
}
