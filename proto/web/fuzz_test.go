package web

import (
	"encoding/base64"
	"net/url"
	"slices"
	"testing"

	"github.com/ingot-hpc/ingot/lien"
)

// The page's decoders, fuzzed: whatever a browser sends, they refuse it
// or return values the pages may use as they are.

func FuzzNodeQuery(f *testing.F) {
	for _, seed := range []string{"name=chem.lab1", "name=chem.lab1&period=week&by=user", "name=a&name=b", "name=", "period=month", "name=x&by=machine", "%zz", "name=chem&period=day&period=week"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := decodeNodeQuery(pathNode, v)
		if err != nil {
			return
		}
		if q.Name == "" || !slices.Contains(lien.UsagePeriods, q.Period) || !slices.Contains(usageBys, q.By) {
			t.Fatalf("%q decoded to %+v", raw, q)
		}
		if back, err := url.Parse(nodeURL(q)); err != nil || back.Query().Get("name") != q.Name {
			t.Fatalf("the page's own URL of %+v: %v %v", q, back, err)
		}
	})
}

func FuzzStatementQuery(f *testing.F) {
	for _, seed := range []string{"account=chem&from=2026-11-01&to=2026-11-30", "account=chem&from=2026-11-30&to=2026-11-01",
		"account=chem&from=1969-12-31&to=1970-01-02", "account=chem&from=2026-02-30&to=2026-03-01", "account=&from=&to=", "from=2026-01-01"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		sp, err := decodeStatementQuery(pathStatement, v)
		if err != nil {
			return
		}
		if sp.Account == "" || sp.From.Before(earliest) || !sp.To.After(sp.From) {
			t.Fatalf("%q decoded to %+v", raw, sp)
		}
	})
}

func FuzzForms(f *testing.F) {
	token, _ := newToken()
	for _, seed := range []string{"token=" + token + "&csrf=" + token, "csrf=" + token, "csrf=a&csrf=b", "token=&csrf=", "csrf=%", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if in, err := decodeSignInForm(body); err == nil && (in.Token == "" || in.CSRF == "") {
			t.Fatalf("sign-in form %q decoded to %+v", body, in)
		}
		if out, err := decodeSignOutForm(body); err == nil && out.CSRF == "" {
			t.Fatalf("sign-out form %q decoded to %+v", body, out)
		}
		if q, err := url.ParseQuery(body); err == nil {
			decodeSignInQuery(q)
		}
	})
}

// FuzzToken: a token as a cookie or a form sends it back is found only in
// its one canonical form.
func FuzzToken(f *testing.F) {
	token, _ := newToken()
	for _, seed := range []string{token, token + "=", token[:42], token[:42] + "B", "", "!!"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, ok := digestOf(s); ok {
			raw, err := base64.RawURLEncoding.DecodeString(s)
			if err != nil || len(raw) != tokenBytes || base64.RawURLEncoding.EncodeToString(raw) != s {
				t.Fatalf("%q taken for a token", s)
			}
		}
	})
}
