package munge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/munge"
	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
)

// TestPayload is the example of the package documentation.
func TestPayload(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/quote?project=chem&machine=hpc1", nil)
	payload, err := munge.Payload(r, []byte(`{"cpus":4,"seconds":3600}`), "2026-11-22T05:00:00Z")
	want := "INGOT-MUNGE-1\nPOST\n/v1/quote\nmachine=hpc1&project=chem\n2026-11-22T05:00:00Z\n" +
		"869caaa4307f72a4330cfce93a7122415dbd9e3cd8cb77223f9a7ca8240bebe2"
	if err != nil || string(payload) != want {
		t.Errorf("payload %q, %v; want %q", payload, err, want)
	}
	if _, err := munge.Payload(httptest.NewRequest("GET", "/v1/balance?a=%zz", nil), nil, "x"); !errors.Is(err, auth.ErrQuery) {
		t.Errorf("bad query: %v", err)
	}
}

// signed is a request signed with a fresh credential by d's munge.
func signed(t *testing.T, d *mungetest.Daemon, method, target, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if err := d.Command().Sign(r, []byte(body), time.Now()); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWithMunged signs and checks requests with a real munged.
func TestWithMunged(t *testing.T) {
	d := mungetest.Start(t)
	v := &munge.Verifier{Command: d.Command()}
	const body = `{"account":"chem","amount":"1"}`

	r := signed(t, d, "POST", "/v1/deposits?x=1", body)
	if !munge.Uses(r) {
		t.Fatalf("Uses(%q) is false", r.Header.Get("Authorization"))
	}
	if uid, err := v.Verify(r, []byte(body)); err != nil || uid != uint32(os.Getuid()) {
		t.Fatalf("Verify: uid %d, %v; want %d", uid, err, os.Getuid())
	}
	t.Run("replayed", func(t *testing.T) {
		_, err := v.Verify(r, []byte(body))
		wantErr(t, err, munge.ErrCredential, "Replayed credential")
	})

	// A credential for one request on another: each check consumes its
	// credential, so each case signs its own.
	for _, tc := range []struct {
		name   string
		tamper func(*http.Request) []byte
		msg    string
	}{
		{"other body", func(*http.Request) []byte { return []byte(`{"account":"chem","amount":"1000"}`) }, "made for the body's SHA-256"},
		{"other path", func(r *http.Request) []byte { r.URL.Path = "/v1/transfers"; return []byte(body) }, `made for the path "/v1/deposits"; this request's is "/v1/transfers"`},
		{"other query", func(r *http.Request) []byte { r.URL.RawQuery = "x=2"; return []byte(body) }, `made for the query "x=1"`},
		{"other method", func(r *http.Request) []byte { r.Method = "PUT"; return []byte(body) }, `made for the method "POST"`},
		{"other date", func(r *http.Request) []byte {
			r.Header.Set(auth.HeaderDate, time.Now().Add(time.Minute).UTC().Format(auth.DateLayout))
			return []byte(body)
		}, "made for the date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := signed(t, d, "POST", "/v1/deposits?x=1", body)
			_, err := v.Verify(r, tc.tamper(r))
			wantErr(t, err, munge.ErrMismatch, tc.msg)
		})
	}

	t.Run("another program's credential", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/v1/balances", nil)
		r.Header.Set("Authorization", "MUNGE "+d.Credential(t, os.Getuid(), []byte("hello")))
		r.Header.Set(auth.HeaderDate, time.Now().UTC().Format(auth.DateLayout))
		_, err := v.Verify(r, nil)
		wantErr(t, err, munge.ErrMismatch, `its payload starts with "hello", not INGOT-MUNGE-1`)
	})

	t.Run("invalid credential", func(t *testing.T) {
		r := signed(t, d, "GET", "/v1/balances", "")
		cred := r.Header.Get("Authorization")
		i := len(cred) / 2
		flipped := byte('A')
		if cred[i] == 'A' {
			flipped = 'B'
		}
		r.Header.Set("Authorization", cred[:i]+string(flipped)+cred[i+1:])
		_, err := v.Verify(r, nil)
		wantErr(t, err, munge.ErrCredential, "credential")
	})

	t.Run("date outside the window", func(t *testing.T) {
		r := signed(t, d, "GET", "/v1/balances", "")
		late := &munge.Verifier{Command: d.Command(), Now: func() time.Time { return time.Now().Add(6 * time.Minute) }}
		_, err := late.Verify(r, nil)
		wantErr(t, err, auth.ErrDate, "behind the server's clock")
		// The date is checked before unmunge: the credential is not used up.
		if _, err := v.Verify(r, nil); err != nil {
			t.Errorf("the credential after a refused date: %v", err)
		}
	})

	t.Run("expired", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/v1/balances", nil)
		d.Sign(t, os.Getuid(), r, nil, "--ttl=1")
		time.Sleep(2100 * time.Millisecond)
		_, err := v.Verify(r, nil)
		wantErr(t, err, munge.ErrCredential, "Expired credential")
	})

	t.Run("nobody", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/v1/balance?node=chem", nil)
		d.Sign(t, mungetest.Nobody, r, nil)
		if uid, err := v.Verify(r, nil); err != nil || uid != mungetest.Nobody {
			t.Errorf("nobody's credential: uid %d, %v", uid, err)
		}
	})
}

// TestRequestScript runs testdata/request.sh, the shell recipe, as nobody
// against a server that checks its credential.
func TestRequestScript(t *testing.T) {
	d := mungetest.Start(t)
	mungetest.Require(t, "sh", "sha256sum", "cut", "curl")
	v := &munge.Verifier{Command: d.Command()}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		uid, err := v.Verify(r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "uid %d", uid)
	}))
	defer ts.Close()
	// nobody must be able to read the script and the body.
	dir := mungetest.PublicDir(t)
	script, err := os.ReadFile("testdata/request.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"request.sh": string(script), "body.json": `{"cpus":4,"seconds":3600}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"GET", "/v1/balance", "node=chem.lab1"},
		{"POST", "/v1/quote", "machine=hpc1&project=chem", filepath.Join(dir, "body.json")},
		{"GET", "/v1/users/j%C3%B6rg", "a=x%20y&b=~"},
	} {
		out, err := mungetest.RunAs(t, mungetest.Nobody, nil, "env", append([]string{"INGOT_SERVER=" + ts.URL, "MUNGE_SOCKET=" + d.Socket,
			"sh", filepath.Join(dir, "request.sh")}, args...)...)
		if err != nil || string(out) != "uid 65534" {
			t.Errorf("request.sh %q: %q, %v", args, out, err)
		}
	}
}

// TestNoMunged: without munged, signing and checking fail as unavailable,
// with munge's own advice.
func TestNoMunged(t *testing.T) {
	mungetest.Require(t, "munge", "unmunge")
	c := munge.Command{Socket: filepath.Join(t.TempDir(), "none")}
	r := httptest.NewRequest("GET", "/v1/balances", nil)
	wantErr(t, c.Sign(r, nil, time.Now()), munge.ErrUnavailable, "Did you start munged?")
	r.Header.Set("Authorization", "MUNGE MUNGE:AwQFAAAhSf1Mfb7AWHSUXIRK=:")
	r.Header.Set(auth.HeaderDate, time.Now().UTC().Format(auth.DateLayout))
	_, err := (&munge.Verifier{Command: c}).Verify(r, nil)
	wantErr(t, err, munge.ErrUnavailable, "Did you start munged?")
	_, err = c.Decode(context.Background(), "MUNGE:x:")
	wantErr(t, err, munge.ErrUnavailable, "unmunge")
}

func wantErr(t *testing.T, err, sentinel error, msg string) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %v; want %v containing %q", err, sentinel, msg)
	}
}
