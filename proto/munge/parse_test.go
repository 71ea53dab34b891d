package munge

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Outputs of Debian's unmunge 0.5.15 with --keys=status,uid,gid.
const (
	unmungeOK       = "STATUS:          Success (0)\nUID:             nobody (65534)\nGID:             nogroup (65534)\n\n"
	unmungeReplayed = "STATUS:          Replayed credential (17)\nUID:             root (0)\nGID:             root (0)\n\n"
	unmungeNoName   = "STATUS:          Success (0)\nUID:             ??? (4242)\nGID:             ??? (4242)\n\n"
)

func TestParseUnmunge(t *testing.T) {
	for _, tc := range []struct {
		name, out     string
		uid           uint32
		payload, fail string
		err           string
	}{
		{"success", unmungeOK + "a\n\nb", 65534, "a\n\nb", "", ""},
		{"empty payload", unmungeOK, 65534, "", "", ""},
		{"uid without an account", unmungeNoName + "x", 4242, "x", "", ""},
		{"replayed", unmungeReplayed + "x", 0, "x", "Replayed credential (17)", ""},
		{"no empty line", "STATUS: Success (0)\nUID: root (0)\nGID: root (0)\n", 0, "", "", "no empty line"},
		{"no uid", "STATUS: Success (0)\nGID: root (0)\n\n", 0, "", "", "no UID"},
		{"uid twice", "STATUS: Success (0)\nUID: root (0)\nUID: amy (1000)\nGID: root (0)\n\n", 0, "", "", "UID twice"},
		{"not a number", "STATUS: Success (0)\nUID: root (x)\nGID: root (0)\n\n", 0, "", "", "not KEY: NAME (NUMBER)"},
		{"beyond 32 bits", "STATUS: Success (0)\nUID: root (4294967296)\nGID: root (0)\n\n", 0, "", "", "not KEY"},
		{"nothing", "", 0, "", "", "no empty line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, failed, err := parseUnmunge([]byte(tc.out))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || c.UID != tc.uid || string(c.Payload) != tc.payload || failed != tc.fail {
				t.Fatalf("got %+v, %q, %v; want uid %d, payload %q, failed %q", c, failed, err, tc.uid, tc.payload, tc.fail)
			}
		})
	}
}

func TestParseAuthorization(t *testing.T) {
	const cred = "MUNGE:AwQFAAAhSf1Mfb7AWHSUXIRK+KLq0ivnbgvOwGUp9iN23s3PyyrL2AoIotMwXJ8LjKxQt4Pw=:"
	for _, tc := range []struct{ header, want, err string }{
		{"MUNGE " + cred, cred, ""},
		{"munge   " + cred, cred, ""},
		{"MUNGE", "", "is not MUNGE:<base64>:"},
		{"MUNGE MUNGE::", "", "is not MUNGE:<base64>:"},
		{"MUNGE " + strings.TrimSuffix(cred, ":"), "", "is not MUNGE:<base64>:"},
		{"MUNGE " + cred + " ", "", "is not MUNGE:<base64>:"},
		{"MUNGE MUNGE:ab\ncd:", "", `byte 8 of the credential, '\n', is not base64`},
		{"MUNGE MUNGE:ab=cd:", "", "is not base64"},
		{"INGOT-HMAC-SHA256 Credential=a, Signature=b", "", `scheme "INGOT-HMAC-SHA256"`},
		{"MUNGE MUNGE:" + strings.Repeat("A", maxCredential) + ":", "", "more than 65536"},
	} {
		got, err := parseAuthorization(tc.header)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("%.60q: got %q, %v; want %q", tc.header, got, err, tc.want)
		}
		if tc.err != "" && (!errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%.60q: error %v, want ErrMalformed containing %q", tc.header, err, tc.err)
		}
	}
}

func TestMismatch(t *testing.T) {
	want := []byte("INGOT-MUNGE-1\nGET\n/v1/balance\nnode=chem\n2026-11-22T05:00:00Z\ne3b0")
	for got, msg := range map[string]string{
		"INGOT-MUNGE-1\nGET\n/v1/available\nnode=chem\n2026-11-22T05:00:00Z\ne3b0":   `made for the path "/v1/available"; this request's is "/v1/balance"`,
		"INGOT-MUNGE-1\nGET\n/v1/balance\nnode=bio\n2026-11-22T05:00:00Z\ne3b0":      `made for the query "node=bio"`,
		"INGOT-MUNGE-1\nGET\n/v1/balance\nnode=chem\n2026-11-22T05:00:00Z\n9f86":     `made for the body's SHA-256 "9f86"`,
		"INGOT-MUNGE-1\nGET\n/v1/balance":                                            "stops before the query",
		"hello":                                                                      `starts with "hello", not INGOT-MUNGE-1`,
		"INGOT-MUNGE-1\nGET\n/v1/balance\nnode=chem\n2026-11-22T05:00:00Z\ne3b0\nxx": "has 7 lines, not 6",
	} {
		if got := mismatch([]byte(got), want); !strings.Contains(got, msg) {
			t.Errorf("mismatch: %q, want it to contain %q", got, msg)
		}
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("MUNGE MUNGE:AwQFAAAhSf1Mfb7AWHSUXIRK+KLq0ivnbgvOwGUp9iN23s3Pyyr=:")
	f.Add("munge  MUNGE:a==:")
	f.Add("MUNGE MUNGE:=:")
	f.Add("Bearer x")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		cred, err := parseAuthorization(header)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if !strings.HasPrefix(cred, "MUNGE:") || !strings.HasSuffix(cred, ":") || len(cred) > maxCredential ||
			strings.ContainsFunc(strings.TrimRight(cred[len("MUNGE:"):len(cred)-1], "="), notBase64) {
			t.Fatalf("accepted credential %q", cred)
		}
		if again, err := parseAuthorization(formatAuthorization(cred)); err != nil || again != cred {
			t.Fatalf("round trip: %q, %v", again, err)
		}
	})
}

func FuzzParseUnmunge(f *testing.F) {
	f.Add([]byte(unmungeOK + "INGOT-MUNGE-1\nGET"))
	f.Add([]byte(unmungeReplayed))
	f.Add([]byte(unmungeNoName + "\n\n"))
	f.Add([]byte("STATUS: (0)\nUID: (1)\nGID: (2)\n\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		c, failed, err := parseUnmunge(out)
		if err != nil {
			return
		}
		if !bytes.HasSuffix(out, c.Payload) || !bytes.Contains(out, []byte("STATUS:")) {
			t.Fatalf("parsed %q as %+v", out, c)
		}
		if failed != "" && !strings.HasSuffix(failed, ")") {
			t.Fatalf("status %q", failed)
		}
	})
}

func FuzzMismatch(f *testing.F) {
	want := "INGOT-MUNGE-1\nGET\n/v1/balance\nnode=chem\n2026-11-22T05:00:00Z\ne3b0"
	f.Add("INGOT-MUNGE-1\nGET\n/v1/available\nnode=chem\n2026-11-22T05:00:00Z\ne3b0")
	f.Add("")
	f.Add("\n\n\n\n\n\n\n")
	f.Fuzz(func(t *testing.T, got string) {
		if got == want {
			return
		}
		if msg := mismatch([]byte(got), []byte(want)); msg == "" || len(msg) > 2500 {
			t.Fatalf("mismatch(%q) = %q", got, msg)
		}
	})
}
