package auth

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The documented example: doc.go and testdata/sign.sh sign this request.
var (
	testNow = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	// testDate is testNow in DateLayout.
	testDate = "2026-11-22T05:00:00Z"
	// testNonce is the nonce of the documented example.
	testNonce = "9f86d081884c7d659a2feaa0c55ad015"
	testBody  = `{"cpus":4,"seconds":3600}`
	// testSignature is the example's signature, computed outside Go.
	testSignature = "00a6c230d216a45f55bbbcaf0f1fc2e83c03ba4af6859e8e173906ba0242c018"
)

var (
	otherKey   = Key{ID: "other", Secret: [32]byte{1}}
	revokedKey = Key{ID: "revoked-1", Secret: [32]byte{2}}
)

// hmacHex is HMAC-SHA256 in hex, written out here so that tests do not
// check the package against itself.
func hmacHex(secret [32]byte, text string) string {
	mac := hmac.New(sha256.New, secret[:])
	io.WriteString(mac, text)
	return hex.EncodeToString(mac.Sum(nil))
}

// newTestVerifier returns a verifier knowing testKey and otherKey (revokedKey
// is known but revoked), whose clock reads *now.
func newTestVerifier(now *time.Time) *Verifier {
	return &Verifier{
		Lookup: func(id string) ([32]byte, bool, error) {
			switch id {
			case testKey.ID:
				return testKey.Secret, true, nil
			case otherKey.ID:
				return otherKey.Secret, true, nil
			}
			return [32]byte{}, false, nil
		},
		Now: func() time.Time { return *now },
	}
}

// newSignedRequest returns the documented example request as the server
// receives it, signed by key with date and nonce.
func newSignedRequest(t *testing.T, key Key, date, nonce string) (*http.Request, []byte) {
	t.Helper()
	r := httptest.NewRequest("POST", "/v1/quote?project=chem&machine=hpc1", strings.NewReader(testBody))
	if err := signAt(r, []byte(testBody), key, date, nonce); err != nil {
		t.Fatal(err)
	}
	return r, []byte(testBody)
}

func TestKnownAnswers(t *testing.T) {
	const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, tc := range []struct {
		name, method, url, body string
		wantToSign              string
		wantSignature           string // "" to compute it from wantToSign
	}{
		{"documented example", "POST", "http://bank/v1/quote?project=chem&machine=hpc1", testBody,
			"POST\n/v1/quote\nmachine=hpc1&project=chem\n" + testDate + "\n" + testNonce + "\n\n" +
				"869caaa4307f72a4330cfce93a7122415dbd9e3cd8cb77223f9a7ca8240bebe2", testSignature},
		{"get without query", "GET", "http://bank/v1/balances", "",
			"GET\n/v1/balances\n\n" + testDate + "\n" + testNonce + "\n\n" + emptyHash, ""},
		{"no path", "GET", "http://bank", "",
			"GET\n/\n\n" + testDate + "\n" + testNonce + "\n\n" + emptyHash, ""},
		{"escaped path and query", "GET", "http://bank/v1/users/j%C3%B6rg?b=x+y&a=%7e&a=", "",
			"GET\n/v1/users/j%C3%B6rg\na=&a=~&b=x%20y\n" + testDate + "\n" + testNonce + "\n\n" + emptyHash, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantSignature := cmp.Or(tc.wantSignature, hmacHex(testSecret, tc.wantToSign))
			r, err := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if err := signAt(r, []byte(tc.body), testKey, testDate, testNonce); err != nil {
				t.Fatal(err)
			}
			method, path, query := requestFields(r)
			toSign, err := StringToSign(method, path, query, testDate, testNonce, r.Header.Get(HeaderRequestID), []byte(tc.body))
			if err != nil || toSign != tc.wantToSign {
				t.Errorf("StringToSign = %q, %v; want %q", toSign, err, tc.wantToSign)
			}
			want := http.Header{
				"Authorization": {"INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + wantSignature},
				"X-Ingot-Date":  {testDate},
				"X-Ingot-Nonce": {testNonce},
			}
			for name, values := range want {
				if got := r.Header.Values(name); len(got) != 1 || got[0] != values[0] {
					t.Errorf("%s: %q, want %q", name, got, values[0])
				}
			}
		})
	}
}

func TestSign(t *testing.T) {
	now := testNow.Add(1500 * time.Millisecond).In(time.FixedZone("CET", 3600))
	r := httptest.NewRequest("GET", "/v1/balances", nil)
	if err := Sign(r, nil, testKey, now); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Header.Get(HeaderDate), "2026-11-22T05:00:01Z"; got != want {
		t.Errorf("date %q, want %q (UTC, whole seconds)", got, want)
	}
	nonce := r.Header.Get(HeaderNonce)
	if b, err := hex.DecodeString(nonce); err != nil || len(b) != nonceBytes || strings.ToLower(nonce) != nonce {
		t.Errorf("nonce %q, want %d random bytes in lowercase hex", nonce, nonceBytes)
	}
	if keyID, err := newTestVerifier(&now).Verify(r, nil); err != nil || keyID != testKey.ID {
		t.Errorf("Verify(Sign(...)) = %q, %v; want %q", keyID, err, testKey.ID)
	}
	if err := Sign(r, nil, testKey, now); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get(HeaderNonce) == nonce {
		t.Error("signing again reused the nonce")
	}
	if err := Sign(r, nil, Key{ID: "bad id"}, now); !errors.Is(err, ErrKeyID) {
		t.Errorf("Sign with a bad key id = %v; want ErrKeyID", err)
	}
	bad := httptest.NewRequest("GET", "/?a=%3B", nil)
	bad.URL.RawQuery = "a=%zz"
	if err := Sign(bad, nil, testKey, now); !errors.Is(err, ErrQuery) {
		t.Errorf("Sign with a bad query = %v; want ErrQuery", err)
	}
}

// TestOverTheWire signs requests with http.Client's view of the URL and
// verifies them with the server's, so that both agree on PATH and QUERY.
func TestOverTheWire(t *testing.T) {
	now := testNow
	verifier := newTestVerifier(&now)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := verifier.Verify(r, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
		}
	}))
	defer server.Close()
	for _, target := range []string{
		"/v1/quote?project=chem&machine=hpc1",
		"/v1/users/j%C3%B6rg/projects",
		"/v1/a%2Fb/c%20d",
		"/v1/x?q=a+b&r=a%20b&s=a%2Bb&t=J%C3%B6rg&u=%7e&flag",
		"?only=query",
		"",
	} {
		t.Run(target, func(t *testing.T) {
			r, err := http.NewRequest("POST", server.URL+target, strings.NewReader(testBody))
			if err != nil {
				t.Fatal(err)
			}
			if err := Sign(r, []byte(testBody), testKey, now); err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if msg, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %s", resp.Status, msg)
			}
		})
	}
}

// TestVerifyRefuses changes a signed request in one way each and checks the
// sentinel error Verify returns.
func TestVerifyRefuses(t *testing.T) {
	resign := func(r *http.Request, body []byte, key Key, date, nonce string) {
		if err := signAt(r, body, key, date, nonce); err != nil {
			t.Fatal(err)
		}
	}
	setAuthorization := func(value string) func(*http.Request, *[]byte) {
		return func(r *http.Request, _ *[]byte) { r.Header.Set("Authorization", value) }
	}
	dateFor := func(d time.Duration) string { return testNow.Add(d).Format(DateLayout) }
	for _, tc := range []struct {
		name   string
		mutate func(r *http.Request, body *[]byte)
		want   error
		detail string // a fragment the message must contain
	}{
		{"tampered body", func(_ *http.Request, b *[]byte) { *b = []byte(`{"cpus":5,"seconds":3600}`) }, ErrBadSignature, `server signed "POST\n/v1/quote\n`},
		{"body dropped", func(_ *http.Request, b *[]byte) { *b = nil }, ErrBadSignature, ""},
		{"tampered path", func(r *http.Request, _ *[]byte) { r.URL.Path = "/v1/liens" }, ErrBadSignature, ""},
		{"path escaped differently", func(r *http.Request, _ *[]byte) { r.URL.RawPath = "/v1/%71uote" }, ErrBadSignature, ""},
		{"tampered query value", func(r *http.Request, _ *[]byte) { r.URL.RawQuery = "project=chem&machine=hpc2" }, ErrBadSignature, ""},
		{"query parameter added", func(r *http.Request, _ *[]byte) { r.URL.RawQuery += "&machine=hpc2" }, ErrBadSignature, ""},
		{"query parameter dropped", func(r *http.Request, _ *[]byte) { r.URL.RawQuery = "project=chem" }, ErrBadSignature, ""},
		{"query malformed", func(r *http.Request, _ *[]byte) { r.URL.RawQuery = "project=%zz" }, ErrQuery, ""},
		{"tampered method", func(r *http.Request, _ *[]byte) { r.Method = "PUT" }, ErrBadSignature, ""},
		{"wrong secret", func(r *http.Request, b *[]byte) {
			resign(r, *b, Key{ID: testKey.ID, Secret: otherKey.Secret}, testDate, testNonce)
		}, ErrBadSignature, `key "sched-1"`},
		{"another key's id", func(r *http.Request, _ *[]byte) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "sched-1", "other", 1))
		}, ErrBadSignature, ""},
		{"unknown key id", func(r *http.Request, b *[]byte) {
			resign(r, *b, Key{ID: "nobody", Secret: testSecret}, testDate, testNonce)
		}, ErrUnknownKey, `"nobody"`},
		{"revoked key", func(r *http.Request, b *[]byte) { resign(r, *b, revokedKey, testDate, testNonce) }, ErrUnknownKey, `"revoked-1"`},

		{"date too old", func(r *http.Request, b *[]byte) {
			resign(r, *b, testKey, dateFor(-5*time.Minute-time.Second), testNonce)
		}, ErrDate, "5m1s behind"},
		{"date too new", func(r *http.Request, b *[]byte) { resign(r, *b, testKey, dateFor(time.Hour), testNonce) }, ErrDate, "1h0m0s ahead"},
		{"date changed after signing", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, dateFor(time.Second)) }, ErrBadSignature, ""},
		{"date with a space", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, "2026-11-22 05:00:00Z") }, ErrDate, "not a UTC time"},
		{"date with an offset", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, "2026-11-22T05:00:00+00:00") }, ErrDate, ""},
		{"date with fractional seconds", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, "2026-11-22T05:00:00.0Z") }, ErrDate, ""},
		{"date with lowercase z", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, "2026-11-22T05:00:00z") }, ErrDate, ""},
		{"date in HTTP format", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, testNow.Format(http.TimeFormat)) }, ErrDate, ""},
		{"date empty", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderDate, "") }, ErrDate, ""},
		{"no date header", func(r *http.Request, _ *[]byte) { r.Header.Del(HeaderDate) }, ErrDate, "no X-Ingot-Date header"},
		{"two date headers", func(r *http.Request, _ *[]byte) { r.Header.Add(HeaderDate, testDate) }, ErrDate, "2 X-Ingot-Date headers"},

		{"nonce changed after signing", func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderNonce, strings.Repeat("ab", 16)) }, ErrBadSignature, ""},
		{"nonce too short", func(r *http.Request, b *[]byte) { resign(r, *b, testKey, testDate, strings.Repeat("ab", 15)) }, ErrNonce, "30 characters"},
		{"nonce too long", func(r *http.Request, b *[]byte) { resign(r, *b, testKey, testDate, strings.Repeat("ab", 65)) }, ErrNonce, "130 characters"},
		{"nonce of odd length", func(r *http.Request, b *[]byte) { resign(r, *b, testKey, testDate, strings.Repeat("a", 33)) }, ErrNonce, ""},
		{"nonce not hex", func(r *http.Request, b *[]byte) { resign(r, *b, testKey, testDate, strings.Repeat("g", 32)) }, ErrNonce, "not hex"},
		{"no nonce header", func(r *http.Request, _ *[]byte) { r.Header.Del(HeaderNonce) }, ErrNonce, "no X-Ingot-Nonce header"},
		{"two nonce headers", func(r *http.Request, _ *[]byte) { r.Header.Add(HeaderNonce, testNonce) }, ErrNonce, ""},

		{"no Authorization", func(r *http.Request, _ *[]byte) { r.Header.Del("Authorization") }, ErrMissing, "no Authorization header"},
		{"two Authorization headers", func(r *http.Request, _ *[]byte) { r.Header.Add("Authorization", "Basic eDp5") }, ErrMissing, ""},
		{"wrong scheme", setAuthorization("AWS4-HMAC-SHA256 Credential=sched-1, Signature=" + testSignature), ErrMissing, `scheme "AWS4-HMAC-SHA256"`},
		{"no Credential", setAuthorization("INGOT-HMAC-SHA256 Signature=" + testSignature), ErrMissing, "no Credential"},
		{"signature of 63 digits", setAuthorization("INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + testSignature[1:]), ErrMissing, "63 characters"},
		{"signature of 66 digits", setAuthorization("INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + testSignature + "00"), ErrMissing, "66 characters"},
		{"signature zero", setAuthorization("INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + strings.Repeat("0", 64)), ErrBadSignature, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, body := newSignedRequest(t, testKey, testDate, testNonce)
			tc.mutate(r, &body)
			now := testNow
			v := newTestVerifier(&now)
			keyID, err := v.Verify(r, body)
			if !errors.Is(err, tc.want) || keyID != "" {
				t.Fatalf("Verify = %q, %v; want %v", keyID, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("Verify: %v; want it to say %q", err, tc.detail)
			}
			if len(v.nonces) != 0 {
				t.Errorf("a refused request left its nonce in the cache")
			}
		})
	}
}

// TestVerifyAccepts lists what Verify tolerates.
func TestVerifyAccepts(t *testing.T) {
	setAuthorization := func(format string) func(*http.Request, []byte) {
		return func(r *http.Request, _ []byte) { r.Header.Set("Authorization", fmt.Sprintf(format, testSignature)) }
	}
	resignAt := func(d time.Duration, nonce string) func(*http.Request, []byte) {
		return func(r *http.Request, body []byte) {
			if err := signAt(r, body, testKey, testNow.Add(d).Format(DateLayout), nonce); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(r *http.Request, body []byte)
	}{
		{"as signed", func(*http.Request, []byte) {}},
		{"query reordered", func(r *http.Request, _ []byte) { r.URL.RawQuery = "machine=hpc1&project=chem" }},
		{"query escapes spelt otherwise", func(r *http.Request, _ []byte) { r.URL.RawQuery = "%6Dachine=hpc%31&&project=chem" }},
		{"date exactly 5 minutes old", resignAt(-5*time.Minute, testNonce)},
		{"date exactly 5 minutes ahead", resignAt(5*time.Minute, testNonce)},
		{"nonce in uppercase", resignAt(0, strings.ToUpper(testNonce))},
		{"nonce of 64 bytes", resignAt(0, strings.Repeat("0f", 64))},
		{"lowercase scheme and names", setAuthorization("ingot-hmac-sha256 credential=sched-1, signature=%s")},
		{"parameters reversed", setAuthorization("INGOT-HMAC-SHA256 Signature=%s, Credential=sched-1")},
		{"extra spaces and tabs", setAuthorization("INGOT-HMAC-SHA256   Credential=sched-1 \t,\tSignature=%s ")},
		{"no space after comma", setAuthorization("INGOT-HMAC-SHA256 Credential=sched-1,Signature=%s")},
		{"signature in uppercase", func(r *http.Request, _ []byte) {
			r.Header.Set("Authorization", "INGOT-HMAC-SHA256 Credential=sched-1, Signature="+strings.ToUpper(testSignature))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, body := newSignedRequest(t, testKey, testDate, testNonce)
			tc.mutate(r, body)
			now := testNow
			if keyID, err := newTestVerifier(&now).Verify(r, body); err != nil || keyID != testKey.ID {
				t.Fatalf("Verify = %q, %v; want %q", keyID, err, testKey.ID)
			}
		})
	}
}

func TestParseAuthorization(t *testing.T) {
	sig := testSignature
	for _, tc := range []struct {
		name, header string
		want         string // a fragment of the error; "" for success
	}{
		{"canonical", "INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + sig, ""},
		{"empty", "", "scheme"},
		{"scheme only", "INGOT-HMAC-SHA256", "no parameters"},
		{"scheme and spaces", "INGOT-HMAC-SHA256   ", "no parameters"},
		{"tab after scheme", "INGOT-HMAC-SHA256\tCredential=sched-1, Signature=" + sig, "scheme"},
		{"leading space", " INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + sig, "scheme"},
		{"other scheme", "Bearer abc", `scheme "Bearer"`},
		{"no Signature", "INGOT-HMAC-SHA256 Credential=sched-1", "no Signature"},
		{"Credential twice", "INGOT-HMAC-SHA256 Credential=sched-1, Credential=sched-1, Signature=" + sig, "Credential given twice"},
		{"Signature twice", "INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + sig + ", signature=" + sig, "signature given twice"},
		{"unknown parameter", "INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + sig + ", Region=eu", `unknown parameter "Region"`},
		{"stray comma", "INGOT-HMAC-SHA256 Credential=sched-1,, Signature=" + sig, "empty parameter"},
		{"trailing comma", "INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + sig + ",", "empty parameter"},
		{"no equals", "INGOT-HMAC-SHA256 Credential sched-1, Signature=" + sig, "has no '='"},
		{"space before equals", "INGOT-HMAC-SHA256 Credential =sched-1, Signature=" + sig, "unknown parameter"},
		{"space after equals", "INGOT-HMAC-SHA256 Credential= sched-1, Signature=" + sig, "invalid key id"},
		{"quoted credential", `INGOT-HMAC-SHA256 Credential="sched-1", Signature=` + sig, "invalid key id"},
		{"empty credential", "INGOT-HMAC-SHA256 Credential=, Signature=" + sig, "invalid key id: empty"},
		{"semicolon separator", "INGOT-HMAC-SHA256 Credential=sched-1; Signature=" + sig, "no Signature"},
		{"empty signature", "INGOT-HMAC-SHA256 Credential=sched-1, Signature=", "0 characters"},
		{"signature not hex", "INGOT-HMAC-SHA256 Credential=sched-1, Signature=" + strings.Repeat("x", 64), "not hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keyID, gotSig, err := parseAuthorization(tc.header)
			if tc.want == "" {
				if err != nil || keyID != "sched-1" || hex.EncodeToString(gotSig) != sig {
					t.Fatalf("parseAuthorization = %q, %x, %v", keyID, gotSig, err)
				}
				return
			}
			if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseAuthorization = %v; want ErrMissing saying %q", err, tc.want)
			}
		})
	}
}

func TestVerifyLookupError(t *testing.T) {
	storeDown := errors.New("store unreachable")
	v := &Verifier{
		Lookup: func(string) ([32]byte, bool, error) { return [32]byte{}, false, storeDown },
		Now:    func() time.Time { return testNow },
	}
	r, body := newSignedRequest(t, testKey, testDate, testNonce)
	_, err := v.Verify(r, body)
	if !errors.Is(err, storeDown) || errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Verify = %v; want the lookup's error, not ErrUnknownKey", err)
	}
}

func TestReplay(t *testing.T) {
	now := testNow
	v := newTestVerifier(&now)
	verify := func(nonce string, want error) {
		t.Helper()
		r, body := newSignedRequest(t, testKey, testDate, nonce)
		if _, err := v.Verify(r, body); !errors.Is(err, want) {
			t.Fatalf("Verify with nonce %s = %v; want %v", nonce, err, want)
		}
	}
	verify(testNonce, nil)
	verify(testNonce, ErrReplay)
	now = now.Add(4 * time.Minute)
	verify(testNonce, ErrReplay)
	verify(strings.ToUpper(testNonce), ErrReplay) // the same bytes
	verify(strings.Repeat("ab", 16), nil)
}

// TestNonceNotBurned checks that a request refused for any reason does not
// use up its nonce: only the key's holder can.
func TestNonceNotBurned(t *testing.T) {
	now := testNow
	v := newTestVerifier(&now)
	for _, key := range []Key{
		{ID: testKey.ID, Secret: otherKey.Secret}, // bad signature
		{ID: "nobody", Secret: testSecret},        // unknown key
		revokedKey,
	} {
		r, body := newSignedRequest(t, key, testDate, testNonce)
		if _, err := v.Verify(r, body); err == nil {
			t.Fatalf("Verify accepted a request signed by %v", key)
		}
	}
	r, body := newSignedRequest(t, testKey, testDate, testNonce)
	body = append(body, ' ')
	if _, err := v.Verify(r, body); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("Verify of a tampered body = %v", err)
	}
	r, body = newSignedRequest(t, testKey, testDate, testNonce)
	if _, err := v.Verify(r, body); err != nil {
		t.Fatalf("the genuine request after refused ones with its nonce: %v", err)
	}
}

// TestNonceKeptWhileDateInWindow: a request dated ahead of the server's
// clock stays acceptable for longer than the window from now, so its nonce
// must be kept until its date leaves the window.
func TestNonceKeptWhileDateInWindow(t *testing.T) {
	now := testNow
	v := newTestVerifier(&now)
	r, body := newSignedRequest(t, testKey, testNow.Add(4*time.Minute).Format(DateLayout), testNonce)
	replay := func() error {
		_, err := v.Verify(r.Clone(r.Context()), body)
		return err
	}
	if err := replay(); err != nil {
		t.Fatal(err)
	}
	now = testNow.Add(9 * time.Minute)
	if err := replay(); !errors.Is(err, ErrReplay) {
		t.Fatalf("replayed at the end of the window: %v; want ErrReplay", err)
	}
	now = testNow.Add(9*time.Minute + time.Second)
	if err := replay(); !errors.Is(err, ErrDate) {
		t.Fatalf("replayed after the window: %v; want ErrDate", err)
	}
	fresh, body := newSignedRequest(t, testKey, now.Format(DateLayout), strings.Repeat("cd", 16))
	if _, err := v.Verify(fresh, body); err != nil {
		t.Fatal(err)
	}
	if len(v.nonces[testKey.ID].expiry) != 1 || len(v.nonces[testKey.ID].byExpiry) != 1 {
		t.Errorf("cache holds %d nonces in %d groups; want only the fresh one", len(v.nonces[testKey.ID].expiry), len(v.nonces[testKey.ID].byExpiry))
	}
}

func TestNonceCacheExpiry(t *testing.T) {
	var c nonceCache
	key := func(i int) nonceKey { return keyOfNonce([]byte{byte(i), byte(i >> 8)}) }
	for i, expires := range []int64{100, 100, 101, 105} {
		if err := c.add(key(i), expires, 90, 10); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		now  int64
		want int
	}{
		{100, 4}, // a nonce expiring at 100 may still be needed during second 100
		{101, 2},
		{105, 1},
		{104, 1}, // the clock stepped back
		{106, 0},
	} {
		c.forgetBefore(step.now)
		if len(c.expiry) != step.want || len(c.byExpiry) > step.want {
			t.Errorf("at %d: %d nonces in %d groups; want %d", step.now, len(c.expiry), len(c.byExpiry), step.want)
		}
	}
	// A long quiet spell: expiry walks the groups, not the seconds.
	if err := c.add(key(9), 200, 190, 10); err != nil {
		t.Fatal(err)
	}
	c.forgetBefore(1 << 40)
	if len(c.expiry) != 0 || len(c.byExpiry) != 0 {
		t.Errorf("after a long spell: %d nonces left", len(c.expiry))
	}
	// After the clock steps back, nonces added then still expire.
	c.forgetBefore(150)
	if err := c.add(key(10), 160, 150, 10); err != nil {
		t.Fatal(err)
	}
	c.forgetBefore(161)
	if len(c.expiry) != 0 {
		t.Errorf("a nonce added after the clock stepped back never expired")
	}
}

func TestNonceCacheCap(t *testing.T) {
	now := testNow
	v := newTestVerifier(&now)
	v.MaxNonces = 3
	verify := func(i int) error {
		r, body := newSignedRequest(t, testKey, now.Format(DateLayout), fmt.Sprintf("%032x", i))
		_, err := v.Verify(r, body)
		return err
	}
	for i := range 3 {
		if err := verify(i); err != nil {
			t.Fatal(err)
		}
	}
	err := verify(3)
	if !errors.Is(err, ErrNonceCacheFull) || !strings.Contains(err.Error(), "3 nonces remembered") {
		t.Fatalf("Verify beyond the cap = %v; want ErrNonceCacheFull", err)
	}
	if err := verify(0); !errors.Is(err, ErrReplay) {
		t.Fatalf("a replay when full = %v; want ErrReplay", err)
	}
	// Another key's requests go on: one client cannot lock out the others.
	r, body := newSignedRequest(t, otherKey, now.Format(DateLayout), fmt.Sprintf("%032x", 99))
	if _, err := v.Verify(r, body); err != nil {
		t.Fatalf("another key while the first's nonces are at the cap: %v", err)
	}
	now = now.Add(DefaultWindow + time.Second)
	if err := verify(3); err != nil {
		t.Fatalf("after the first nonces expired: %v", err)
	}
}

// TestConcurrentReplay sends one request many times at once: exactly one
// copy must pass.
func TestConcurrentReplay(t *testing.T) {
	now := testNow
	v := newTestVerifier(&now)
	r, body := newSignedRequest(t, testKey, testDate, testNonce)
	const copies = 32
	errs := make(chan error, copies)
	var wg sync.WaitGroup
	for range copies {
		wg.Go(func() {
			_, err := v.Verify(r.Clone(r.Context()), body)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	accepted := 0
	for err := range errs {
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, ErrReplay):
			t.Errorf("Verify = %v; want nil or ErrReplay", err)
		}
	}
	if accepted != 1 {
		t.Errorf("%d copies accepted, want 1", accepted)
	}
}

// TestRequestIDIsSigned: a request id changed on the way, added or taken
// away, breaks the signature; a request signed the way before the request
// id was signed is refused with an error saying what changed.
func TestRequestIDIsSigned(t *testing.T) {
	now := testNow
	sign := func(id string) *http.Request {
		r := httptest.NewRequest("POST", "/v1/deposits", strings.NewReader(testBody))
		if id != "" {
			r.Header.Set(HeaderRequestID, id)
		}
		if err := signAt(r, []byte(testBody), testKey, testDate, testNonce); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		signed, as string // the id signed, the id sent ("-": none)
	}{
		{"changed", "deposit-1", "deposit-2"},
		{"added", "", "deposit-2"},
		{"removed", "deposit-1", "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sign(tc.signed)
			r.Header.Del(HeaderRequestID)
			if tc.as != "-" {
				r.Header.Set(HeaderRequestID, tc.as)
			}
			if _, err := newTestVerifier(&now).Verify(r, []byte(testBody)); !errors.Is(err, ErrBadSignature) || errors.Is(err, ErrOldStringToSign) {
				t.Errorf("Verify = %v, want ErrBadSignature", err)
			}
		})
	}
	r := sign("deposit-1")
	r.Header.Add(HeaderRequestID, "deposit-2")
	if _, err := newTestVerifier(&now).Verify(r, []byte(testBody)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("two request ids: %v, want ErrBadSignature", err)
	}
	// Signed the old way: METHOD PATH QUERY DATE NONCE BODY-HASH.
	old := httptest.NewRequest("POST", "/v1/deposits", strings.NewReader(testBody))
	old.Header.Set(HeaderRequestID, "deposit-1")
	text := "POST\n/v1/deposits\n\n" + testDate + "\n" + testNonce + "\n" + "869caaa4307f72a4330cfce93a7122415dbd9e3cd8cb77223f9a7ca8240bebe2"
	old.Header.Set("Authorization", Scheme+" Credential="+testKey.ID+", Signature="+hmacHex(testSecret, text))
	old.Header.Set(HeaderDate, testDate)
	old.Header.Set(HeaderNonce, testNonce)
	_, err := newTestVerifier(&now).Verify(old, []byte(testBody))
	if !errors.Is(err, ErrOldStringToSign) || !strings.Contains(err.Error(), "X-Ingot-Request-Id header's value (empty on reads) on a line of its own") {
		t.Errorf("a request signed the old way: %v, want ErrOldStringToSign", err)
	}
}
