package auth

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func FuzzParseAuthorization(f *testing.F) {
	f.Add("INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + testSignature)
	f.Add("ingot-hmac-sha256  Signature=" + strings.ToUpper(testSignature) + "\t,Credential=a")
	f.Add("INGOT-HMAC-SHA256 Credential=sched-1,, Signature=")
	f.Add("Bearer x")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		keyID, sig, err := parseAuthorization(header)
		if err != nil {
			if !errors.Is(err, ErrMissing) {
				t.Fatalf("error %v is not ErrMissing", err)
			}
			return
		}
		if ValidateKeyID(keyID) != nil || len(sig) != 32 {
			t.Fatalf("accepted key id %q, signature %x", keyID, sig)
		}
		if !strings.HasPrefix(strings.ToUpper(header), Scheme+" ") {
			t.Fatalf("accepted %q without the scheme", header)
		}
		// The canonical form of what was parsed parses to the same.
		keyID2, sig2, err := parseAuthorization(formatAuthorization(keyID, sig))
		if err != nil || keyID2 != keyID || string(sig2) != string(sig) {
			t.Fatalf("round trip: %q, %x, %v", keyID2, sig2, err)
		}
	})
}

func FuzzParseKeyFile(f *testing.F) {
	f.Add([]byte("sched-1:" + testSecretText + "\n"))
	f.Add([]byte("sched-1:" + testSecretText + "=\r\n"))
	f.Add([]byte("a:" + strings.Repeat("_", 43)))
	f.Add([]byte("a:b:c\n\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := ParseKeyFile(data)
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error %v is not ErrKeyFile", err)
			}
			return
		}
		if ValidateKeyID(key.ID) != nil {
			t.Fatalf("accepted key id %q", key.ID)
		}
		// A key has one spelling, up to the tolerated newline and padding.
		spelling := strings.TrimSuffix(string(data), "\n")
		spelling = strings.TrimSuffix(spelling, "\r")
		spelling = strings.TrimSuffix(spelling, "=")
		if canonical := strings.TrimSuffix(string(key.KeyFile()), "\n"); spelling != canonical {
			t.Fatalf("accepted %q for the key written %q", data, canonical)
		}
		if back, err := ParseKeyFile(key.KeyFile()); err != nil || back != key {
			t.Fatalf("round trip: %v, %v", back, err)
		}
	})
}

// canonicalQueryForm is what CanonicalQuery may return: name=value pairs
// joined by '&', each of unreserved characters and uppercase %XX.
var canonicalQueryForm = regexp.MustCompile(strings.ReplaceAll(`^(E=E(&E=E)*)?$`, "E", `([A-Za-z0-9._~-]|%[0-9A-F]{2})*`))

// FuzzCanonicalQuery checks that the canonical query is well formed,
// idempotent, independent of the parameters' order, and describes exactly
// what the handler reads with url.ParseQuery.
func FuzzCanonicalQuery(f *testing.F) {
	for _, seed := range []string{
		"", "b=2&a=1", "a=1&a=1", "flag&x=", "q=a+b&r=a%20b&s=a%2Bb", "p=%2fv1%2F&*=!", "name=J%C3%B6rg",
		"a=%zz", "a;b", "&&=&", "%FF=%00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		canonical, err := CanonicalQuery(raw)
		handlerView, parseErr := url.ParseQuery(raw)
		if err != nil {
			if !errors.Is(err, ErrQuery) {
				t.Fatalf("error %v is not ErrQuery", err)
			}
			if parseErr == nil {
				t.Fatalf("refused %q, which url.ParseQuery reads as %v: %v", raw, handlerView, err)
			}
			return
		}
		if parseErr != nil {
			t.Fatalf("accepted %q, which url.ParseQuery refuses: %v", raw, parseErr)
		}
		if !canonicalQueryForm.MatchString(canonical) {
			t.Fatalf("CanonicalQuery(%q) = %q: not canonical in form", raw, canonical)
		}
		if again, err := CanonicalQuery(canonical); err != nil || again != canonical {
			t.Fatalf("not idempotent: %q → %q → %q, %v", raw, canonical, again, err)
		}
		segments := strings.Split(raw, "&")
		slices.Reverse(segments)
		if reordered, err := CanonicalQuery(strings.Join(segments, "&")); err != nil || reordered != canonical {
			t.Fatalf("order matters: %q → %q, reversed → %q, %v", raw, canonical, reordered, err)
		}
		if fromHandler, err := CanonicalQuery(handlerView.Encode()); err != nil || fromHandler != canonical {
			t.Fatalf("%q canonicalises to %q, but the handler reads %v, canonically %q (%v)", raw, canonical, handlerView, fromHandler, err)
		}
	})
}

// FuzzVerify feeds Verify arbitrary requests. signWith chooses the
// Authorization header: 0 the fuzzed one, 1 a correct signature of the
// fuzzed request by the right key, 2 one by a wrong secret. Verify must
// never panic, refuse with a sentinel error, accept only a signature of
// the right key, and accept a request once.
func FuzzVerify(f *testing.F) {
	f.Add("POST", "/v1/quote", "project=chem&machine=hpc1", "INGOT-HMAC-SHA256 Credential=sched-1, Signature="+testSignature,
		testDate, testNonce, []byte(testBody), byte(0))
	f.Add("POST", "/v1/quote", "project=chem&machine=hpc1", "", testDate, testNonce, []byte(testBody), byte(1))
	f.Add("GET", "/v1/a%2Fb", "q=a+b", "", "2026-11-22T05:04:59Z", strings.ToUpper(testNonce), []byte{}, byte(1))
	f.Add("GET", "/", "", "", testDate, testNonce, []byte(nil), byte(2))
	f.Add("PUT", "/x", "a=%zz", "INGOT-HMAC-SHA256 Credential=nobody, Signature="+testSignature, "2026-11-22T05:00:00.5Z", "00", []byte("x"), byte(0))
	wrongSecret := otherKey.Secret
	f.Fuzz(func(t *testing.T, method, path, rawQuery, authorization, date, nonce string, body []byte, signWith byte) {
		if strings.Contains(method, "\n") {
			method = "GET" // net/http never delivers such a method
		}
		r := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery}, Header: http.Header{}}
		m, p, q := requestFields(r)
		toSign, signable := StringToSign(m, p, q, date, nonce, "", body)
		switch signWith % 3 {
		case 1:
			if signable == nil {
				authorization = Scheme + " Credential=" + testKey.ID + ", Signature=" + hmacHex(testSecret, toSign)
			}
		case 2:
			if signable == nil {
				authorization = Scheme + " Credential=" + testKey.ID + ", Signature=" + hmacHex(wrongSecret, toSign)
			}
		}
		for name, value := range map[string]string{"Authorization": authorization, HeaderDate: date, HeaderNonce: nonce} {
			if value != "" {
				r.Header.Set(name, value)
			}
		}
		now := testNow
		v := newTestVerifier(&now)
		keyID, err := v.Verify(r, body)
		if err != nil {
			for _, sentinel := range []error{ErrMissing, ErrUnknownKey, ErrBadSignature, ErrDate, ErrNonce, ErrQuery} {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("Verify: %v wraps no sentinel error", err)
		}
		if keyID != testKey.ID || signWith%3 == 2 {
			t.Fatalf("Verify accepted key %q (signWith %d)", keyID, signWith)
		}
		if signable != nil || !strings.Contains(strings.ToLower(authorization), hmacHex(testSecret, toSign)) {
			t.Fatalf("Verify accepted %q, which does not carry the right signature", authorization)
		}
		if _, err := v.Verify(r, body); !errors.Is(err, ErrReplay) {
			t.Fatalf("a replay: %v; want ErrReplay", err)
		}
	})
}
