package munge

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/proto/auth"
)

// payloadTag is the first line of every payload: the format and its
// version, so that a credential made for something else is not taken for
// a request.
const payloadTag = "INGOT-MUNGE-1"

// Payload returns the payload of a credential for request r, whose
// complete body is body, sent with date as its X-Ingot-Date header:
//
//	INGOT-MUNGE-1 "\n" METHOD "\n" PATH "\n" QUERY "\n" DATE "\n" hex(SHA-256(body))
//
// PATH, QUERY and the body's hash are those of the HMAC string to sign
// (auth.CanonicalRequest).
func Payload(r *http.Request, body []byte, date string) ([]byte, error) {
	text, err := auth.CanonicalRequest(r, body, date)
	if err != nil {
		return nil, err
	}
	return []byte(payloadTag + "\n" + text), nil
}

// payloadFields names the lines of a payload, for a refusal to say which
// one differs.
var payloadFields = []string{"format", "method", "path", "query", "date", "body's SHA-256"}

// mismatch says how payload got, from a credential, differs from want, the
// payload of the request it came with.
func mismatch(got, want []byte) string {
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i, field := range payloadFields {
		switch {
		case i >= len(gotLines):
			return fmt.Sprintf("its payload stops before the %s", field)
		case i == 0 && gotLines[0] != payloadTag:
			return fmt.Sprintf("its payload starts with %.40q, not %s: not made for an ingot request", gotLines[0], payloadTag)
		case gotLines[i] != wantLines[i]:
			return fmt.Sprintf("it was made for the %s %.100q; this request's is %.100q", field, gotLines[i], wantLines[i])
		}
	}
	return fmt.Sprintf("its payload has %d lines, not %d", len(gotLines), len(payloadFields))
}

// Sign sets r's Authorization and X-Ingot-Date headers: a fresh credential
// made by c's munge at now, for r with body, which must be exactly the
// bytes r will send. Sign again before a retry: the server accepts a
// credential once.
func (c Command) Sign(r *http.Request, body []byte, now time.Time) error {
	date := now.UTC().Format(auth.DateLayout)
	payload, err := Payload(r, body, date)
	if err != nil {
		return err
	}
	credential, err := c.Encode(r.Context(), payload)
	if err != nil {
		return err
	}
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Set("Authorization", formatAuthorization(credential))
	r.Header.Set(auth.HeaderDate, date)
	return nil
}

// Verifier checks MUNGE credentials, server side. Set its fields before the
// first Verify and do not change them after; Verify is safe for concurrent
// use.
type Verifier struct {
	// Command runs unmunge.
	Command Command
	// Now is the server's clock; nil means time.Now.
	Now func() time.Time
	// Window is how far a request's date may be from Now, either way; zero
	// means auth.DefaultWindow.
	Window time.Duration
}

// Verify checks the MUNGE credential of r, whose complete body is body,
// and returns the uid of the process that made it. It checks, in this
// order: the Authorization header's syntax (ErrMalformed), the date
// (auth.ErrDate), the query (auth.ErrQuery), the credential itself with
// unmunge (ErrCredential, ErrUnavailable), and that its payload is r's
// (ErrMismatch). munged remembers a credential once decoded, so that it is
// refused the next time: a replay is ErrCredential.
func (v *Verifier) Verify(r *http.Request, body []byte) (uid uint32, err error) {
	header, err := auth.SingleHeader(r.Header, "Authorization")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	credential, err := parseAuthorization(header)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	date, _, err := auth.CheckDate(r.Header, now, cmp.Or(v.Window, auth.DefaultWindow))
	if err != nil {
		return 0, err
	}
	want, err := Payload(r, body, date)
	if err != nil {
		return 0, err
	}
	decoded, err := v.Command.Decode(r.Context(), credential)
	if err != nil {
		return 0, err
	}
	if string(decoded.Payload) != string(want) {
		return 0, fmt.Errorf("%w: %s", ErrMismatch, mismatch(decoded.Payload, want))
	}
	return decoded.UID, nil
}
