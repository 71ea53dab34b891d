package auth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireTools skips the test unless the named commands are on PATH; with
// INGOT_E2E=1 it fails instead, so that a CI run cannot silently skip.
func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("INGOT_E2E") == "1" {
				t.Fatalf("%s is not on PATH, and INGOT_E2E=1 requires it: %v", name, err)
			}
			t.Skipf("%s is not on PATH: skipping the shell recipe test (INGOT_E2E=1 makes this a failure)", name)
		}
	}
}

// writeFile writes data to name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runSignScript runs testdata/sign.sh with the arguments and environment
// given and returns its standard output.
func runSignScript(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, stderr, err := signScript(t, env, args...)
	if err != nil {
		t.Fatalf("sign.sh %q: %v\n%s", args, err, stderr)
	}
	return out
}

// signScript runs testdata/sign.sh and returns its standard output and
// error and how it exited.
func signScript(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	script, err := filepath.Abs("testdata/sign.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	return string(out), errOut.String(), err
}

// TestSignScript checks that testdata/sign.sh, the openssl recipe, signs as
// this package does and that Verify accepts its headers.
func TestSignScript(t *testing.T) {
	requireTools(t, "sh", "openssl", "od", "tr", "sed")
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "key", testKey.KeyFile())
	for _, tc := range []struct {
		name, method, path, query, body, requestID string
	}{
		{"documented example", "POST", "/v1/quote", "machine=hpc1&project=chem", testBody, ""},
		{"no query, no body", "GET", "/v1/balances", "", "", ""},
		{"escapes", "GET", "/v1/users/j%C3%B6rg", "a=x%20y&b=~&c=J%C3%B6rg", "", ""},
		{"binary body", "PUT", "/v1/blob", "", "\x00\xff\n\r\n%s\\", ""},
		{"a change, its request id signed", "POST", "/v1/deposits", "", `{"account":"chem","amount":"10"}`, "deposit-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{keyFile, tc.method, tc.path, tc.query}
			if tc.body != "" {
				args = append(args, writeFile(t, dir, "body", []byte(tc.body)))
			}
			out := runSignScript(t, []string{"INGOT_SIGN_ONLY=1", "INGOT_DATE=" + testDate, "INGOT_NONCE=" + testNonce, "INGOT_REQUEST_ID=" + tc.requestID}, args...)

			r := httptest.NewRequest(tc.method, tc.path+"?"+tc.query, strings.NewReader(tc.body))
			if tc.requestID != "" {
				r.Header.Set(HeaderRequestID, tc.requestID)
			}
			for line := range strings.Lines(out) {
				name, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
				if !ok {
					t.Fatalf("sign.sh printed %q, want headers", line)
				}
				r.Header.Add(name, value)
			}
			want := r.Clone(r.Context())
			if err := signAt(want, []byte(tc.body), testKey, testDate, testNonce); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"Authorization", HeaderDate, HeaderNonce} {
				if got, want := r.Header.Values(name), want.Header.Get(name); len(got) != 1 || got[0] != want {
					t.Errorf("sign.sh's %s: %q; Sign's: %q", name, got, want)
				}
			}
			now := testNow
			if _, err := newTestVerifier(&now).Verify(r, []byte(tc.body)); err != nil {
				t.Errorf("Verify refuses sign.sh's headers: %v", err)
			}
		})
	}
}

// TestDocRecipe runs the shell commands of doc.go's worked example, but the
// curl, and checks the body hash and signature the text gives.
func TestDocRecipe(t *testing.T) {
	requireTools(t, "sh", "openssl", "od", "tr", "sed")
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "In a POSIX shell:\n//\n")
	if !ok {
		t.Fatal("doc.go: no worked example")
	}
	var recipe strings.Builder
	for line := range strings.Lines(block) {
		command, ok := strings.CutPrefix(line, "//\t")
		if !ok || strings.HasPrefix(command, "curl ") {
			break
		}
		recipe.WriteString(command)
	}
	recipe.WriteString(`printf '%s %s' "$body_hash" "$signature"` + "\n")

	cmd := exec.Command("sh", "-eu")
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(recipe.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the recipe failed: %v\n%s\n%s", err, recipe.String(), stderr.String())
	}
	want := "869caaa4307f72a4330cfce93a7122415dbd9e3cd8cb77223f9a7ca8240bebe2 " + testSignature
	if string(out) != want {
		t.Errorf("the recipe printed %q, want %q", out, want)
	}
	for _, value := range strings.Fields(want) {
		if !strings.Contains(strings.ReplaceAll(string(doc), "\n// ", " "), value) {
			t.Errorf("doc.go does not give %s", value)
		}
	}
}

// TestSignScriptWithCurl sends a request with sign.sh, curl included, to a
// server that verifies it.
func TestSignScriptWithCurl(t *testing.T) {
	requireTools(t, "sh", "openssl", "od", "tr", "sed", "date", "curl")
	now := time.Now()
	verifier := newTestVerifier(&now)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now = time.Now()
		keyID, err := verifier.Verify(r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "%s %s %s", keyID, r.URL.Query().Get("name"), body)
	}))
	defer server.Close()
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "key", testKey.KeyFile())
	bodyFile := writeFile(t, dir, "body", []byte(testBody))
	out := runSignScript(t, []string{"INGOT_SERVER=" + server.URL},
		keyFile, "POST", "/v1/users/j%C3%B6rg/../x", "name=J%C3%B6rg%20K", bodyFile)
	if want := "sched-1 Jörg K " + testBody; out != want {
		t.Errorf("the server answered %q, want %q", out, want)
	}

	// A request the server refuses (signed with a wrong secret) exits 22,
	// curl's status for an HTTP error, and still prints the server's
	// answer.
	wrongKey := writeFile(t, dir, "wrong", Key{ID: testKey.ID, Secret: otherKey.Secret}.KeyFile())
	out, stderr, err := signScript(t, []string{"INGOT_SERVER=" + server.URL}, wrongKey, "GET", "/v1/balance")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 22 {
		t.Errorf("sign.sh with a wrong key: %v, want exit status 22\n%s", err, stderr)
	}
	if !strings.Contains(out, "signature does not match") {
		t.Errorf("sign.sh with a wrong key printed %q, want the server's refusal", out)
	}
}
