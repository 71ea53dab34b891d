// Package jsonbuf appends JSON to a byte slice, giving exactly the bytes
// encoding/json gives for the same values. It is for the hand-written
// encoders of the records and answers every lien and charge writes (in
// ledger, charge and lien): encoding/json's reflection, and its
// re-validation and compaction of every MarshalJSON method's output, were
// a large part of the single writer's time.
//
// An encoder built on it writes an object member by member, in the order
// of the struct's fields, honouring their omitempty and omitzero options
// itself. Each such encoder must be checked against encoding/json on
// random values with every field set (package jsontest), so that a field
// added later without its line in the encoder fails a test.
//
// It is a leaf of the module (it imports nothing of ours), so that the
// charge package, which imports no other package of ours, can use it too.
package jsonbuf

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Buf is JSON being appended to a byte slice. The first error (a value
// that encoding/json would refuse) sticks: later writes are kept but the
// result is an error.
type Buf struct {
	b   []byte
	err error
}

// New starts appending to dst.
func New(dst []byte) *Buf { return &Buf{b: dst} }

// Bytes is dst with the JSON appended, or the first error.
func (b *Buf) Bytes() ([]byte, error) { return b.b, b.err }

// Len is how many bytes have been written.
func (b *Buf) Len() int { return len(b.b) }

// Fail records err, unless an error was recorded already.
func (b *Buf) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Open and Close write an object's braces.
func (b *Buf) Open()  { b.b = append(b.b, '{') }
func (b *Buf) Close() { b.b = append(b.b, '}') }

// Key writes a member's name (which must need no escaping), after a comma
// unless it is the object's first.
func (b *Buf) Key(name string) {
	if b.b[len(b.b)-1] != '{' {
		b.b = append(b.b, ',')
	}
	b.b = append(b.b, '"')
	b.b = append(b.b, name...)
	b.b = append(b.b, '"', ':')
}

// An Appender is a value with a hand-written encoder built on Buf, giving
// json.Marshal's bytes: the frequent requests, answers and records (liens,
// charges, lien and charge requests and answers), whose encoding by
// reflection, and encoding/json's compaction of every MarshalJSON method's
// output, were a large part of the single writer's time.
type Appender interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// Marshal appends v's JSON, exactly as json.Marshal gives it, to dst: by
// v's own encoder if it is an Appender. Answers and request hashes are
// stored, so the bytes must not change whichever way they are made.
func Marshal(dst []byte, v any) ([]byte, error) {
	if a, ok := v.(Appender); ok {
		return a.AppendJSON(dst)
	}
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// A SizeHint is how long the last encoding of one kind of thing (a kind of
// journal entry, a kind of answer, a bucket's records) was, so that the
// next starts in a buffer with room for it: appended to from nothing, a
// record of a kilobyte grew through seven buffers, a sixth of what the
// bank's single writer allocated. Safe for concurrent use.
type SizeHint struct{ last atomic.Int64 }

// hintSlack is room beyond the last length, for the next being longer.
const hintSlack = 64

// Buf is an empty buffer with room for the last length noted, and a bit.
// A nil hint gives nil.
func (h *SizeHint) Buf() []byte { return h.Grow(nil) }

// Grow is dst with room after it for the last length noted, and a bit. A
// nil hint gives dst.
func (h *SizeHint) Grow(dst []byte) []byte {
	if h == nil {
		return dst
	}
	return slices.Grow(dst, int(h.last.Load())+hintSlack)
}

// Note remembers b's length for the next Buf; a nil hint does nothing.
func (h *SizeHint) Note(b []byte) {
	if h != nil {
		h.last.Store(int64(len(b)))
	}
}

// Object appends to dst an object whose members fields writes: the body
// of an AppendJSON method.
func Object(dst []byte, fields func(*Buf)) ([]byte, error) {
	b := New(dst)
	b.Open()
	fields(b)
	b.Close()
	return b.Bytes()
}

// The Opt methods write a member whose field is tagged omitempty (omitzero
// for a time): nothing when the value is the zero value.

func (b *Buf) OptStr(name, s string) {
	if s != "" {
		b.Key(name)
		b.Str(s)
	}
}

func (b *Buf) OptInt(name string, n int64) {
	if n != 0 {
		b.Key(name)
		b.Int(n)
	}
}

func (b *Buf) OptUint(name string, n uint64) {
	if n != 0 {
		b.Key(name)
		b.Uint(n)
	}
}

func (b *Buf) OptTrue(name string, v bool) {
	if v {
		b.Key(name)
		b.Bool(true)
	}
}

func (b *Buf) OptTime(name string, t time.Time) {
	if !t.IsZero() {
		b.Key(name)
		b.Time(t)
	}
}

// Str writes s as encoding/json does (with its default HTML escaping):
// control characters, quote, backslash, <, > and & escaped, invalid UTF-8
// replaced by U+FFFD, and U+2028 and U+2029 escaped. (It does not hand
// the strings that need escaping to encoding/json: explanations hold
// non-ASCII text, "×", in every answer.)
func (b *Buf) Str(s string) {
	b.b = append(b.b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				continue
			}
			b.b = append(append(b.b, s[start:i-1]...), asciiEscape(c)...)
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		var escape string
		switch {
		case r == utf8.RuneError && size == 1:
			escape = `\ufffd`
		case r == '\u2028':
			escape = `\u2028`
		case r == '\u2029':
			escape = `\u2029`
		default:
			continue
		}
		b.b = append(append(b.b, s[start:i-size]...), escape...)
		start = i
	}
	b.b = append(append(b.b, s[start:]...), '"')
}

// asciiEscape is how encoding/json escapes an ASCII byte that needs it.
func asciiEscape(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	const hex = "0123456789abcdef" // the other control characters, <, > and &
	return string([]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]})
}

func (b *Buf) Uint(n uint64) { b.b = strconv.AppendUint(b.b, n, 10) }

func (b *Buf) Int(n int64) { b.b = strconv.AppendInt(b.b, n, 10) }

func (b *Buf) Bool(v bool) { b.b = strconv.AppendBool(b.b, v) }

// Decimal writes d as decimal.Decimal's MarshalJSON does: its text
// (String), quoted. A coefficient of at most 18 digits with no positive
// exponent, under the decimal package's default settings (every amount
// here), is written by appendDecimal: String's big.Int text and string
// concatenations were a third of the encoding of an answer.
func (b *Buf) Decimal(d decimal.Decimal) {
	b.b = append(b.b, '"')
	b.b = AppendDecimal(b.b, d)
	b.b = append(b.b, '"')
}

// AppendDecimal appends d's text, as its String gives it, to dst (see
// Decimal).
func AppendDecimal(dst []byte, d decimal.Decimal) []byte {
	if d.Exponent() > 0 || d.NumDigits() > 18 || decimal.UseScientificNotation || !decimal.TrimTrailingZeros {
		return append(dst, d.String()...)
	}
	return appendDecimal(dst, d.CoefficientInt64(), int(-d.Exponent()))
}

// appendDecimal writes coefficient × 10^-scale as decimal.Decimal's String
// does by default: the digits with a point before the last scale of them
// (a zero before it if none is left), the fraction's trailing zeros
// trimmed, and no point when nothing is left of the fraction.
func appendDecimal(dst []byte, coefficient int64, scale int) []byte {
	magnitude := uint64(coefficient)
	if coefficient < 0 {
		dst = append(dst, '-')
		magnitude = -magnitude // right for math.MinInt64 too
	}
	var text [20]byte
	fraction := strconv.AppendUint(text[:0], magnitude, 10)
	zeros := 0 // between the point and the fraction's digits
	if whole := len(fraction) - scale; whole > 0 {
		dst = append(dst, fraction[:whole]...)
		fraction = fraction[whole:]
	} else {
		dst = append(dst, '0')
		zeros = -whole
	}
	for len(fraction) > 0 && fraction[len(fraction)-1] == '0' {
		fraction = fraction[:len(fraction)-1]
	}
	if len(fraction) == 0 {
		return dst
	}
	dst = append(dst, '.')
	for range zeros {
		dst = append(dst, '0')
	}
	return append(dst, fraction...)
}

// Time writes t as time.Time's MarshalJSON does, which refuses years
// outside 0 to 9999.
func (b *Buf) Time(t time.Time) {
	if y := t.Year(); y < 0 || y > 9999 {
		_, err := t.MarshalJSON()
		b.Fail(err)
		return
	}
	b.b = append(b.b, '"')
	b.b = t.AppendFormat(b.b, time.RFC3339Nano)
	b.b = append(b.b, '"')
}

// Value writes v with encoding/json: for the values that are rare in the
// hot records (a ledger entry's settings, nodes, users, machines, records).
func (b *Buf) Value(v any) {
	raw, err := json.Marshal(v)
	b.b = append(b.b, raw...)
	b.Fail(err)
}

// Raw writes a json.RawMessage as it is. encoding/json would compact it;
// the raw messages here (lien and charge details) are encoding/json's own
// output or this package's, compact already.
func (b *Buf) Raw(m json.RawMessage) { b.b = append(b.b, m...) }

// Append writes a value by its own AppendJSON method (pass the method
// value, e.g. b.Append(lien.AppendJSON)): how an encoder in one package
// nests a value whose encoder is in another.
func (b *Buf) Append(appendJSON func(dst []byte) ([]byte, error)) {
	var err error
	b.b, err = appendJSON(b.b)
	b.Fail(err)
}

// Array writes xs as encoding/json writes a slice: null when nil, else
// each element by elem, comma separated, in brackets.
func Array[T any](b *Buf, xs []T, elem func(*Buf, T)) {
	if xs == nil {
		b.b = append(b.b, "null"...)
		return
	}
	b.b = append(b.b, '[')
	for i, x := range xs {
		if i > 0 {
			b.b = append(b.b, ',')
		}
		elem(b, x)
	}
	b.b = append(b.b, ']')
}

// Strings writes a []string as encoding/json does.
func (b *Buf) Strings(ss []string) { Array(b, ss, (*Buf).Str) }

// IntMap writes a map of integers by name as encoding/json does: null
// when nil, else its members in key order.
func (b *Buf) IntMap(m map[string]int64) {
	if m == nil {
		b.b = append(b.b, "null"...)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.b = append(b.b, '{')
	for i, k := range keys {
		if i > 0 {
			b.b = append(b.b, ',')
		}
		b.Str(k)
		b.b = append(b.b, ':')
		b.Int(m[k])
	}
	b.b = append(b.b, '}')
}
