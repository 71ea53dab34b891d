package schedule_test

import (
	"testing"

	"github.com/ingot-hpc/ingot/schedule"
)

// FuzzParseCarryOver: any text is refused or read as a rule whose
// String reads back as the same rule, and whose share of a leftover is
// never more than the leftover nor negative.
func FuzzParseCarryOver(f *testing.F) {
	for _, s := range []string{"none", "all", "50", "12.5%", "50:300", "100", "0", "101", "-1", "50:", "x:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		co, err := schedule.ParseCarryOver(s)
		if err != nil {
			return
		}
		again, err := schedule.ParseCarryOver(co.String())
		if err != nil || again.String() != co.String() {
			t.Fatalf("%q reads as %q, which reads as %q (%v)", s, co.String(), again.String(), err)
		}
		left := dec("1234.56")
		if got := co.Of(left, 2); got.IsNegative() || got.GreaterThan(left) {
			t.Fatalf("%q moves %s of %s", s, got, left)
		}
	})
}
