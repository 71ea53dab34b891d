package jsonbuf

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzStr wants Str to write every string, valid UTF-8 or not, as
// encoding/json does.
func FuzzStr(f *testing.F) {
	for _, s := range []string{"", "chem.lab1", `quo"te\`, "<a&b>", "\x00\b\f\n\r\t\x1f\x7f", "3 × 4 → 12",
		"\u2028\u2029", "\xff\xfe", "\xe2\x80", "日本 🎉", "\U0010ffff", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := New([]byte("x"))
		b.Str(s)
		got, _ := b.Bytes()
		want, _ := json.Marshal(s)
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("Str(%q) = %s, encoding/json gives %s", s, got[1:], want)
		}
	})
}
