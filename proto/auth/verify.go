package auth

import (
	"crypto/hmac"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"
)

const (
	// DefaultWindow is how far a request's date may be from the server's
	// clock, either way.
	DefaultWindow = 5 * time.Minute
	// DefaultMaxNonces caps the nonces a Verifier remembers of one key:
	// enough for about 1,700 requests a second from it over the five
	// minutes a nonce is usually kept, in about 35 MB when full (see
	// Verifier.MaxNonces).
	DefaultMaxNonces = 1 << 19
)

// KeyLookup returns the secret of the key with the given id. ok is false
// for a key that is unknown or revoked; err is for the lookup failing
// (the store is unreachable), not for a bad key.
type KeyLookup func(id string) (secret [32]byte, ok bool, err error)

// Verifier checks signed requests, server side. Set its fields before the
// first Verify and do not change them after; Verify is safe for concurrent
// use.
type Verifier struct {
	// Lookup finds keys. Required.
	Lookup KeyLookup
	// Now is the server's clock; nil means time.Now.
	Now func() time.Time
	// Window is how far a request's date may be from Now, either way;
	// zero means DefaultWindow.
	Window time.Duration
	// MaxNonces caps the nonces remembered of each key for replay
	// detection; zero means DefaultMaxNonces. A nonce is kept until its
	// request's date leaves the window, so a steady r requests a second
	// need about r × Window of them (twice that if clients' clocks run
	// ahead), at roughly 50 to 70 bytes each. When a key's cap is reached,
	// Verify refuses properly signed requests of that key with
	// ErrNonceCacheFull until its older nonces expire; other keys are not
	// affected, so one client cannot lock the others out. A bound on
	// memory, not a rate limit (that belongs in front of Verify).
	MaxNonces int

	mu     sync.Mutex
	nonces map[string]*nonceCache // by key id
}

// Verify checks that r, whose complete body is body, is signed by a known
// key, and returns the key's id. It checks, in this order: the
// Authorization header's syntax (ErrMissing), the date (ErrDate), the nonce's
// syntax (ErrNonce), the key (ErrUnknownKey, or the lookup's own error), the
// query (ErrQuery), the signature (ErrBadSignature), and only then records
// the nonce (ErrReplay, ErrNonceCacheFull), so that a request that fails a
// check leaves no trace and nobody without the key can use up a nonce.
func (v *Verifier) Verify(r *http.Request, body []byte) (keyID string, err error) {
	authorization, err := SingleHeader(r.Header, "Authorization")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMissing, err)
	}
	keyID, sig, err := parseAuthorization(authorization)
	if err != nil {
		return "", err
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	window := v.Window
	if window == 0 {
		window = DefaultWindow
	}
	date, signedAt, err := CheckDate(r.Header, now, window)
	if err != nil {
		return "", err
	}
	nonce, rawNonce, err := checkNonce(r.Header)
	if err != nil {
		return "", err
	}

	secret, ok, err := v.Lookup(keyID)
	if err != nil {
		return "", fmt.Errorf("auth: looking up key %q: %w", keyID, err)
	}
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownKey, keyID)
	}
	requestID, err := optionalHeader(r.Header, HeaderRequestID)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	method, path, query := requestFields(r)
	text, err := StringToSign(method, path, query, date, nonce, requestID, body)
	if err != nil {
		return "", err
	}
	if !hmac.Equal(sig, signature(secret, text)) {
		if old, err := canonicalText(method, path, query, body, date, nonce); err == nil && hmac.Equal(sig, signature(secret, old)) {
			return "", fmt.Errorf("%w: key %q: %w", ErrBadSignature, keyID, ErrOldStringToSign)
		}
		// The string the server signed is no secret and tells a client's
		// author which field they canonicalised differently.
		return "", fmt.Errorf("%w: key %q; the server signed %q (is the secret right, and the request id the one signed?)", ErrBadSignature, keyID, text)
	}

	maxNonces := v.MaxNonces
	if maxNonces == 0 {
		maxNonces = DefaultMaxNonces
	}
	v.mu.Lock()
	if v.nonces == nil {
		v.nonces = map[string]*nonceCache{}
	}
	c := v.nonces[keyID]
	if c == nil {
		c = &nonceCache{}
		v.nonces[keyID] = c
	}
	err = c.add(keyOfNonce(rawNonce), signedAt.Add(window).Unix(), now.Unix(), maxNonces)
	v.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("%w (key %q, nonce %s)", err, keyID, nonce)
	}
	return keyID, nil
}

// SingleHeader returns the value of header name, which must appear once:
// with several, which one was signed (or which credential is meant) would
// be ambiguous.
func SingleHeader(h http.Header, name string) (string, error) {
	values := h.Values(name)
	switch len(values) {
	case 0:
		return "", fmt.Errorf("no %s header", name)
	case 1:
		return values[0], nil
	default:
		return "", fmt.Errorf("%d %s headers, want one", len(values), name)
	}
}

// CheckDate returns the X-Ingot-Date header and its time, which must be
// within window of now (ErrDate otherwise). Package munge checks the date
// of a MUNGE request with it too.
func CheckDate(h http.Header, now time.Time, window time.Duration) (string, time.Time, error) {
	date, err := SingleHeader(h, HeaderDate)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrDate, err)
	}
	// time.Parse also accepts fractional seconds; the round trip refuses
	// them, so that each instant has one spelling.
	signedAt, err := time.Parse(DateLayout, date)
	if err != nil || signedAt.Format(DateLayout) != date {
		return "", time.Time{}, fmt.Errorf("%w: %.40q is not a UTC time like 2026-11-22T05:00:00Z", ErrDate, date)
	}
	switch age := now.Sub(signedAt); {
	case age > window:
		return "", time.Time{}, fmt.Errorf("%w: %s is %s behind the server's clock (%s); allowed ±%s",
			ErrDate, date, age.Round(time.Millisecond), now.UTC().Format(time.RFC3339), window)
	case -age > window:
		return "", time.Time{}, fmt.Errorf("%w: %s is %s ahead of the server's clock (%s); allowed ±%s",
			ErrDate, date, (-age).Round(time.Millisecond), now.UTC().Format(time.RFC3339), window)
	}
	return date, signedAt, nil
}

// checkNonce returns the nonce header and its bytes.
func checkNonce(h http.Header) (string, []byte, error) {
	nonce, err := SingleHeader(h, HeaderNonce)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrNonce, err)
	}
	if len(nonce) < minNonceHex || len(nonce) > maxNonceHex || len(nonce)%2 != 0 {
		return "", nil, fmt.Errorf("%w: %d characters; want an even number of hex digits from %d to %d (16 to 64 random bytes)",
			ErrNonce, len(nonce), minNonceHex, maxNonceHex)
	}
	rawNonce, err := hex.DecodeString(nonce)
	if err != nil {
		return "", nil, fmt.Errorf("%w: not hex (%v)", ErrNonce, err)
	}
	return nonce, rawNonce, nil
}

// optionalHeader is header name's value, "" if absent; several are refused
// (which one was signed would be ambiguous).
func optionalHeader(h http.Header, name string) (string, error) {
	if len(h.Values(name)) == 0 {
		return "", nil
	}
	return SingleHeader(h, name)
}
