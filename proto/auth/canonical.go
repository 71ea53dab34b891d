package auth

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// StringToSign returns the text a request's signature is computed over:
//
//	METHOD "\n" PATH "\n" QUERY "\n" DATE "\n" NONCE "\n" REQUEST_ID "\n" hex(SHA-256(body))
//
// escapedPath is the path as sent ("/" when empty), rawQuery the query as
// sent, which is canonicalised with CanonicalQuery; date, nonce and
// requestID are the X-Ingot-Date, X-Ingot-Nonce and X-Ingot-Request-Id
// header values (requestID empty when there is none, as on reads). The
// request id is signed so that nobody on the path can change it: a
// change re-sent under another id would be applied again, and one
// rewritten to an earlier change's id would get that change's receipt.
// The fields must not contain newlines, which would make two different
// requests sign the same text.
func StringToSign(method, escapedPath, rawQuery, date, nonce, requestID string, body []byte) (string, error) {
	return canonicalText(method, escapedPath, rawQuery, body, date, nonce, requestID)
}

// CanonicalRequest returns the lines that bind a credential to request r,
// whose complete body is body:
//
//	METHOD "\n" PATH "\n" QUERY "\n" FIELD "\n" ... hex(SHA-256(body))
//
// with one line for each of fields (header values) between the query and
// the body's hash. The string to sign is the request's with its date and
// nonce; package munge binds a MUNGE credential with the date alone.
func CanonicalRequest(r *http.Request, body []byte, fields ...string) (string, error) {
	method, path, query := requestFields(r)
	return canonicalText(method, path, query, body, fields...)
}

// canonicalText is the text of StringToSign and CanonicalRequest.
func canonicalText(method, escapedPath, rawQuery string, body []byte, fields ...string) (string, error) {
	query, err := CanonicalQuery(rawQuery)
	if err != nil {
		return "", err
	}
	if escapedPath == "" {
		escapedPath = "/"
	}
	bodyHash := sha256.Sum256(body)
	lines := slices.Concat([]string{method, escapedPath, query}, fields, []string{hex.EncodeToString(bodyHash[:])})
	for _, field := range lines {
		if strings.Contains(field, "\n") {
			return "", fmt.Errorf("auth: newline in %q, a field of the string to sign", field)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// requestFields returns what StringToSign needs from r besides the headers.
// An empty method means GET, as for http.Client.
func requestFields(r *http.Request) (method, escapedPath, rawQuery string) {
	method = r.Method
	if method == "" {
		method = http.MethodGet
	}
	return method, r.URL.EscapedPath(), r.URL.RawQuery
}

// maxQueryParams is net/url's default limit: beyond it url.ParseQuery
// fails and the handler would read no parameters at all.
const maxQueryParams = 10000

// CanonicalQuery returns the canonical form of a raw query string, the
// QUERY of the string to sign.
//
// The raw query is decoded exactly as net/url decodes it for the handler
// (url.ParseQuery): parameters separated by '&', empty ones skipped; name and
// value split at the first '='; percent escapes and '+' (a space) decoded; a
// ';' refused, more than maxQueryParams parameters refused. So the signature covers what the handler reads, and a
// request cannot be altered into one with the same canonical query but a
// different meaning. Each decoded name and value is then percent-encoded:
// A-Z a-z 0-9 - . _ ~ as they are, every other byte as %XX (uppercase hex;
// a space is %20). The pairs are sorted by encoded name, then by encoded
// value, comparing bytes, and joined as name=value with '&'.
//
// Consequences: "a" and "a=" are both "a=" (the handler cannot tell them
// apart either); a repeated name keeps every value, duplicates included,
// values sorted; "+" and "%20" are both a space, so a literal plus must be
// sent as %2B. A canonical query is its own canonical form.
func CanonicalQuery(rawQuery string) (string, error) {
	if n := strings.Count(rawQuery, "&") + 1; n > maxQueryParams {
		return "", fmt.Errorf("%w: %d parameters, at most %d", ErrQuery, n, maxQueryParams)
	}
	type param struct{ name, value string } // percent-encoded
	var params []param
	for segment := range strings.SplitSeq(rawQuery, "&") {
		if segment == "" {
			continue
		}
		if strings.Contains(segment, ";") {
			return "", fmt.Errorf("%w: ';' in %.64q: separate parameters with '&', send a literal ';' as %%3B", ErrQuery, segment)
		}
		rawName, rawValue, _ := strings.Cut(segment, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrQuery, err)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrQuery, err)
		}
		params = append(params, param{percentEncode(name), percentEncode(value)})
	}
	slices.SortFunc(params, func(a, b param) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.value, b.value))
	})
	var query strings.Builder
	for i, p := range params {
		if i > 0 {
			query.WriteByte('&')
		}
		query.WriteString(p.name)
		query.WriteByte('=')
		query.WriteString(p.value)
	}
	return query.String(), nil
}

// percentEncode encodes s as RFC 3986 does for data: unreserved bytes as
// they are, every other byte as %XX.
func percentEncode(s string) string {
	const upperHex = "0123456789ABCDEF"
	var encoded strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' {
			encoded.WriteByte(c)
		} else {
			encoded.Write([]byte{'%', upperHex[c>>4], upperHex[c&0xF]})
		}
	}
	return encoded.String()
}
