package munge

import (
	"fmt"
	"net/http"
	"strings"
)

const (
	// Scheme is the Authorization scheme of a request with a MUNGE
	// credential.
	Scheme = "MUNGE"
	// maxCredential bounds a credential: one for a payload of a few
	// hundred bytes is about 200 characters, and a path and query longer
	// than this would be refused by the HTTP server first.
	maxCredential = 64 << 10
)

// Uses reports whether r's Authorization header names the MUNGE scheme, so
// that the server checks it as a MUNGE credential rather than a signature.
func Uses(r *http.Request) bool {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, Scheme)
}

// formatAuthorization returns the Authorization header of a credential.
func formatAuthorization(credential string) string { return Scheme + " " + credential }

// parseAuthorization returns the credential of an Authorization header:
// the scheme in any case, one or more spaces, then the credential as munge
// prints it, "MUNGE:" base64 ":" (standard alphabet, padded).
func parseAuthorization(header string) (string, error) {
	scheme, credential, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, Scheme) {
		return "", fmt.Errorf("%w: scheme %.32q; want %s MUNGE:<base64>:", ErrMalformed, scheme, Scheme)
	}
	credential = strings.TrimLeft(credential, " ")
	body, ok := strings.CutPrefix(credential, "MUNGE:")
	if ok {
		body, ok = strings.CutSuffix(body, ":")
	}
	switch {
	case !ok || body == "":
		return "", fmt.Errorf("%w: the credential %.40q is not MUNGE:<base64>: as munge prints it", ErrMalformed, credential)
	case len(credential) > maxCredential:
		return "", fmt.Errorf("%w: the credential has %d characters, more than %d", ErrMalformed, len(credential), maxCredential)
	}
	// Only a screen, so that no stray byte reaches unmunge: unmunge decodes
	// the base64 itself.
	if i := strings.IndexFunc(strings.TrimRight(body, "="), notBase64); i >= 0 {
		return "", fmt.Errorf("%w: byte %d of the credential, %q, is not base64", ErrMalformed, len("MUNGE:")+i, body[i])
	}
	return credential, nil
}

// notBase64 reports whether r is outside the standard base64 alphabet.
func notBase64(r rune) bool {
	return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '+' || r == '/')
}
