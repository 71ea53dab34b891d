package auth

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestCanonicalQuery(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"empty", "", ""},
		{"only separators", "&&&", ""},
		{"one", "a=1", "a=1"},
		{"sorted by name", "b=2&a=1&c=3", "a=1&b=2&c=3"},
		{"repeated name sorted by value", "a=2&a=10&a=1", "a=1&a=10&a=2"},
		{"duplicates kept", "a=1&a=1", "a=1&a=1"},
		{"name before value", "a-b=1&a=2", "a=2&a-b=1"},
		{"sorted by encoded bytes", "x=%7E&x=%C3%A9&x=%20", "x=%20&x=%C3%A9&x=~"},
		{"empty value", "a=&b=", "a=&b="},
		{"no value", "a&b", "a=&b="},
		{"no value equals empty value", "flag&flag=", "flag=&flag="},
		{"empty name", "=v", "=v"},
		{"empty segments skipped", "&a=1&&b=2&", "a=1&b=2"},
		{"second equals is data", "a=b=c", "a=b%3Dc"},
		{"plus is a space", "q=a+b", "q=a%20b"},
		{"%20 is a space", "q=a%20b", "q=a%20b"},
		{"%2B is a plus", "q=a%2Bb", "q=a%2Bb"},
		{"lowercase escapes made uppercase", "p=%2fv1%2f", "p=%2Fv1%2F"},
		{"unreserved escapes decoded", "%61=%7e%2D%2E%5F", "a=~-._"},
		{"reserved characters encoded", "r=!*'()$,/?:@[]", "r=%21%2A%27%28%29%24%2C%2F%3F%3A%40%5B%5D"},
		{"unicode as UTF-8 bytes", "name=Jörg&city=%E6%9D%B1%E4%BA%AC", "city=%E6%9D%B1%E4%BA%AC&name=J%C3%B6rg"},
		{"invalid UTF-8 kept as bytes", "b=%FF", "b=%FF"},
		{"encoded separators stay data", "a=1%262&b=%3D", "a=1%262&b=%3D"},
		{"control characters", "c=%00%0A", "c=%00%0A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalQuery(tc.raw)
			if err != nil || got != tc.want {
				t.Fatalf("CanonicalQuery(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
			}
			again, err := CanonicalQuery(got)
			if err != nil || again != got {
				t.Errorf("not idempotent: CanonicalQuery(%q) = %q, %v", got, again, err)
			}
		})
	}
}

func TestCanonicalQueryErrors(t *testing.T) {
	for _, tc := range []struct{ name, raw string }{
		{"bad escape", "a=%zz"},
		{"truncated escape", "a=%4"},
		{"bad escape in name", "%g=1"},
		{"semicolon", "a=1;b=2"},
		{"semicolon alone", ";"},
		{"too many parameters", strings.Repeat("a&", maxQueryParams)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := CanonicalQuery(tc.raw); !errors.Is(err, ErrQuery) {
				t.Fatalf("CanonicalQuery(%.40q) = %q, %v; want ErrQuery", tc.raw, got, err)
			}
		})
	}
	if _, err := CanonicalQuery(strings.Repeat("a&", maxQueryParams-1)); err != nil {
		t.Errorf("CanonicalQuery(%d parameters) = %v; want success", maxQueryParams, err)
	}
}

func TestStringToSign(t *testing.T) {
	const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, tc := range []struct {
		name                                        string
		method, path, query, date, nonce, requestID string
		body                                        string
		want                                        string
	}{
		{"documented example", "POST", "/v1/quote", "project=chem&machine=hpc1", "2026-11-22T05:00:00Z",
			"9f86d081884c7d659a2feaa0c55ad015", "job-42-quote", `{"cpus":4,"seconds":3600}`,
			"POST\n/v1/quote\nmachine=hpc1&project=chem\n2026-11-22T05:00:00Z\n9f86d081884c7d659a2feaa0c55ad015\njob-42-quote\n" +
				"869caaa4307f72a4330cfce93a7122415dbd9e3cd8cb77223f9a7ca8240bebe2"},
		{"no query, empty body, a read (no request id)", "GET", "/v1/balances", "", "2026-01-02T03:04:05Z",
			"00112233445566778899aabbccddeeff", "", "",
			"GET\n/v1/balances\n\n2026-01-02T03:04:05Z\n00112233445566778899aabbccddeeff\n\n" + emptyHash},
		{"empty path is /", "GET", "", "", "2026-01-02T03:04:05Z", "00112233445566778899aabbccddeeff", "", "",
			"GET\n/\n\n2026-01-02T03:04:05Z\n00112233445566778899aabbccddeeff\n\n" + emptyHash},
		{"escaped path as is", "DELETE", "/v1/users/j%C3%B6rg/a%2Fb", "", "2026-01-02T03:04:05Z",
			"00112233445566778899aabbccddeeff", "r1", "",
			"DELETE\n/v1/users/j%C3%B6rg/a%2Fb\n\n2026-01-02T03:04:05Z\n00112233445566778899aabbccddeeff\nr1\n" + emptyHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StringToSign(tc.method, tc.path, tc.query, tc.date, tc.nonce, tc.requestID, []byte(tc.body))
			if err != nil || got != tc.want {
				t.Fatalf("StringToSign = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestStringToSignRefusesNewlines(t *testing.T) {
	fields := [5]string{"GET", "/", "2026-01-02T03:04:05Z", "00112233445566778899aabbccddeeff", "r1"}
	for i := range fields {
		bad := fields
		bad[i] += "\nX"
		if _, err := StringToSign(bad[0], bad[1], "", bad[2], bad[3], bad[4], nil); err == nil {
			t.Errorf("StringToSign with a newline in field %d: no error", i)
		}
	}
	if _, err := StringToSign("GET", "/", "a=%zz", fields[2], fields[3], "", nil); !errors.Is(err, ErrQuery) {
		t.Errorf("StringToSign with a bad query = %v; want ErrQuery", err)
	}
}

// TestDocQueryTable checks the examples of canonical queries in doc.go.
func TestDocQueryTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "raw query                   canonical query\n")
	if !ok {
		t.Fatal("doc.go: no table of canonical queries")
	}
	row := regexp.MustCompile(`^//\t(\S+) +(\S+)$`)
	rows := 0
	for line := range strings.Lines(table) {
		m := row.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			break
		}
		rows++
		if got, err := CanonicalQuery(m[1]); err != nil || got != m[2] {
			t.Errorf("doc.go says %q canonicalises to %q; it is %q, %v", m[1], m[2], got, err)
		}
	}
	if rows < 5 {
		t.Errorf("doc.go: found %d rows of canonical queries, want at least 5", rows)
	}
}
