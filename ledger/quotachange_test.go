package ledger

import (
	"errors"
	"testing"
)

// FuzzParseQuotaChange: what ParseQuotaChange takes prints back as a text
// it reads the same, and what it refuses is ErrInvalid.
func FuzzParseQuotaChange(f *testing.F) {
	for _, s := range []string{"chem.lab1=dynamic:0.6", "chem.lab1=none", "chem.a=static:1000", "chem.a=shares:2", "chem.a=5",
		"=static:1", "chem.a", "chem.a=dynamic:-1", "chem.a=dynamic:1e3", "chem.a==none", "chem a=none"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseQuotaChange(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", s, err)
			}
			return
		}
		again, err := ParseQuotaChange(c.String())
		if err != nil || again.Node != c.Node || again.Kind != c.Kind || !again.Quota.Equal(c.Quota) {
			t.Fatalf("%q reads as %+v, whose text %q reads as %+v, %v", s, c, c.String(), again, err)
		}
	})
}
