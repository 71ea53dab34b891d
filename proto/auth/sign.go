package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

const (
	// Scheme is the Authorization scheme of a signed request.
	Scheme = "INGOT-HMAC-SHA256"
	// HeaderDate carries the signing time, in DateLayout.
	HeaderDate = "X-Ingot-Date"
	// HeaderNonce carries the nonce: 16 to 64 random bytes in hex.
	HeaderNonce = "X-Ingot-Nonce"
	// HeaderRequestID carries a change's request id, which is signed.
	HeaderRequestID = "X-Ingot-Request-Id"
	// DateLayout is the one accepted form of HeaderDate: RFC 3339 in UTC,
	// whole seconds, "Z".
	DateLayout = "2006-01-02T15:04:05Z"

	// nonceBytes is the size of the nonces Sign makes.
	nonceBytes = 16
	// Nonces are 16 to 64 bytes, as 32 to 128 hex digits.
	minNonceHex = 2 * 16
	maxNonceHex = 2 * 64
)

// Sign signs r for key at time now: it sets the Authorization, X-Ingot-Date
// and X-Ingot-Nonce headers (a fresh random nonce each call). body must be
// exactly the bytes r will send; the method, path, query and
// X-Ingot-Request-Id header (set it first) are r's.
// Sign again before a retry: the server accepts each nonce once.
func Sign(r *http.Request, body []byte, key Key, now time.Time) error {
	var nonce [nonceBytes]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("auth: generating a nonce: %w", err)
	}
	return signAt(r, body, key, now.UTC().Format(DateLayout), hex.EncodeToString(nonce[:]))
}

// signAt is Sign with the date and nonce given, for tests with fixed values.
func signAt(r *http.Request, body []byte, key Key, date, nonce string) error {
	if err := ValidateKeyID(key.ID); err != nil {
		return err
	}
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	method, path, query := requestFields(r)
	text, err := StringToSign(method, path, query, date, nonce, r.Header.Get(HeaderRequestID), body)
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", formatAuthorization(key.ID, signature(key.Secret, text)))
	r.Header.Set(HeaderDate, date)
	r.Header.Set(HeaderNonce, nonce)
	return nil
}

// signature returns HMAC-SHA256(secret, stringToSign).
func signature(secret [32]byte, stringToSign string) []byte {
	mac := hmac.New(sha256.New, secret[:])
	mac.Write([]byte(stringToSign))
	return mac.Sum(nil)
}

// NewRequestID is a new request id: the time in nanoseconds, then 8
// random bytes, in hex. The bank keeps a record per request id for retries,
// in a B-tree ordered by client and id: ids that grow with time go at the
// end of the client's range, where purely random ids would land each on a
// page of its own, and every commit would rewrite a page per request.
func NewRequestID() string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(time.Now().UnixNano()))
	b = b[:16]
	rand.Read(b[8:])
	return hex.EncodeToString(b)
}
