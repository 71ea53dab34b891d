package jsonbuf

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/shopspring/decimal"
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

// FuzzDecimal wants Decimal to write every decimal as its MarshalJSON
// method does.
func FuzzDecimal(f *testing.F) {
	for _, c := range []struct {
		coefficient int64
		exp         int32
	}{{0, 0}, {0, -2}, {100, -2}, {-5, -1}, {5, 3}, {123456789123456789, -9}, {-1, -30}, {math.MinInt64, -3}, {math.MaxInt64, -19}, {7, -40}} {
		f.Add(c.coefficient, c.exp)
	}
	f.Fuzz(func(t *testing.T, coefficient int64, exp int32) {
		if exp < -1000 || exp > 1000 {
			t.Skip() // long runs of zeros
		}
		d := decimal.New(coefficient, exp)
		b := New([]byte("x"))
		b.Decimal(d)
		got, _ := b.Bytes()
		want, _ := d.MarshalJSON()
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("Decimal(%d×10^%d) = %s, MarshalJSON gives %s", coefficient, exp, got[1:], want)
		}
	})
}

// TestSizeHint: a buffer from a hint has room for the last length noted,
// and a nil hint gives nil and notes nothing.
func TestSizeHint(t *testing.T) {
	var h SizeHint
	if b := h.Buf(); len(b) != 0 || cap(b) < hintSlack {
		t.Fatalf("a new hint's buffer: len %d cap %d", len(b), cap(b))
	}
	h.Note(make([]byte, 1500))
	if b := h.Buf(); len(b) != 0 || cap(b) < 1500 {
		t.Fatalf("after noting 1500 bytes: len %d cap %d", len(b), cap(b))
	}
	var none *SizeHint
	none.Note(make([]byte, 10))
	if b := none.Buf(); b != nil {
		t.Fatalf("a nil hint's buffer: %v", b)
	}
}
