// Package jsonread reads JSON for hand-written decoders of the few types
// decoded at every lien and charge (the server's requests, the client's
// answers), with encoding/json as the fallback. encoding/json's reflection,
// and its validation of the whole input before decoding it, were the
// largest avoidable part of a request's CPU on either side.
//
// A decoder built on a Reader reads only what it is sure encoding/json
// would read the same way, and gives up on anything else: escapes in
// strings or names, null (but where the decoder reads it: Null), numbers that are not plain integers, names it
// does not know (encoding/json also matches them case-insensitively) or
// that an object repeats (encoding/json merges those), nesting deeper than
// it bothers with. The caller then decodes the input again with
// encoding/json, into a zero value, and gets exactly encoding/json's value
// or error. Giving up is never wrong, only slower; reading something that
// encoding/json would read otherwise, or refuse, is a bug. So each decoder
// must be checked against encoding/json on random values (every field set)
// and by a fuzz target: whatever it accepts, encoding/json must accept
// and decode to a deeply equal value.
//
// Values of a type with its own UnmarshalJSON (times, decimals) are passed
// to that method as the same bytes encoding/json passes it.
//
// It is a leaf of the module, as package jsonbuf is.
package jsonread

import (
	"bytes"
	"encoding"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Reader reads one JSON value from a byte slice. Its methods read the next
// value as the type they are named after; the first one that cannot (or
// Fail) makes the Reader fail: later calls read nothing and return zero
// values, and OK and End report false.
type Reader struct {
	data []byte
	i    int
	ok   bool
	// first: the object or array opened last has no member or element yet.
	first bool
	// names are the names read in the objects open, outermost first: an
	// object's Member looks for its new name among those from its own mark.
	names [maxNames]span
	n     int
}

// maxNames bounds the names held for the objects open together; deeper
// or wider input is given up on.
const maxNames = 48

// span is data[start:end].
type span struct{ start, end int }

// New starts reading data.
func New(data []byte) *Reader { return &Reader{data: data, ok: true} }

// OK reports whether every read so far succeeded.
func (r *Reader) OK() bool { return r.ok }

// Fail makes the Reader fail: the caller met something it does not read.
func (r *Reader) Fail() { r.ok = false }

// End reports whether the whole input was read with no failure: nothing
// but whitespace after the value.
func (r *Reader) End() bool {
	r.space()
	return r.ok && r.i == len(r.data)
}

// space skips JSON's whitespace.
func (r *Reader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// byte consumes c, the next byte after whitespace, or fails.
func (r *Reader) byte(c byte) bool {
	r.space()
	if !r.ok || r.i >= len(r.data) || r.data[r.i] != c {
		r.ok = false
		return false
	}
	r.i++
	return true
}

// peek is the next byte after whitespace, 0 at the end or after a failure.
func (r *Reader) peek() byte {
	r.space()
	if !r.ok || r.i >= len(r.data) {
		return 0
	}
	return r.data[r.i]
}

// Object opens an object; it returns the mark to give Member.
func (r *Reader) Object() (mark int) {
	r.byte('{')
	r.first = true
	return r.n
}

// Member reads the next member's name and colon, leaving its value to
// read; it returns false at the object's end (or on failure). The name is
// then Name. A name with escapes, or one the object had already, fails.
func (r *Reader) Member(mark int) bool {
	if r.peek() == '}' {
		r.i++
		r.first, r.n = false, mark
		return false
	}
	if !r.first && !r.byte(',') {
		return false
	}
	r.first = false
	if r.peek() != '"' {
		r.ok = false
		return false
	}
	start := r.i + 1
	if r.stringEnd() < 0 || r.n == maxNames {
		r.ok = false
		return false
	}
	name := r.data[start : r.i-1]
	for _, s := range r.names[mark:r.n] {
		if bytes.Equal(r.data[s.start:s.end], name) {
			r.ok = false
			return false
		}
	}
	r.names[r.n] = span{start, r.i - 1}
	r.n++
	return r.byte(':')
}

// Name is the name Member read last.
func (r *Reader) Name() []byte {
	if r.n == 0 {
		return nil
	}
	s := r.names[r.n-1]
	return r.data[s.start:s.end]
}

// Array opens an array: read its elements while Element is true.
func (r *Reader) Array() {
	r.byte('[')
	r.first = true
}

// Element reports whether the array has another element, leaving it to
// read; false at the array's end (or on failure).
func (r *Reader) Element() bool {
	if r.peek() == ']' {
		r.i++
		r.first = false
		return false
	}
	if !r.first && !r.byte(',') {
		return false
	}
	r.first = false
	return r.ok
}

// stringEnd reads the string at r.i, which starts with a quote, up to
// its closing quote. It returns -1 (not failing the Reader) for a string
// with escapes, control characters or bytes that are not UTF-8, which
// encoding/json would unescape, refuse or replace.
func (r *Reader) stringEnd() int {
	start := r.i + 1
	ascii := true
	for j := start; j < len(r.data); j++ {
		switch c := r.data[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(r.data[start:j]) {
				return -1
			}
			r.i = j + 1
			return r.i
		case c == '\\' || c < 0x20:
			return -1
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return -1
}

// text reads a string and returns its bytes, within the input.
func (r *Reader) text() []byte {
	if r.peek() != '"' {
		r.ok = false
		return nil
	}
	start := r.i + 1
	if r.stringEnd() < 0 {
		r.ok = false
		return nil
	}
	return r.data[start : r.i-1]
}

// Str reads a string.
func (r *Reader) Str() string {
	b := r.text()
	if !r.ok {
		return ""
	}
	return string(b)
}

// Null reads null if it comes next, reporting whether it did: encoding/json
// leaves a value as it is for null, but for a slice, map or pointer, which
// it sets to nil.
func (r *Reader) Null() bool {
	if r.peek() != 'n' {
		return false
	}
	return r.literal("null")
}

// Bool reads true or false.
func (r *Reader) Bool() bool {
	switch r.peek() {
	case 't':
		return r.literal("true")
	case 'f':
		r.literal("false")
		return false
	}
	r.ok = false
	return false
}

// literal consumes word, reporting whether it did.
func (r *Reader) literal(word string) bool {
	if !bytes.HasPrefix(r.data[r.i:], []byte(word)) {
		r.ok = false
		return false
	}
	r.i += len(word)
	return true
}

// maxDigits is the most digits Int and Uint read: any such number fits in
// an int64. Longer ones are given up on.
const maxDigits = 18

// digits reads a JSON number that is a plain integer (an optional minus,
// then digits without leading zeros, no fraction or exponent) of at most
// maxDigits digits, and returns its absolute value and sign.
func (r *Reader) digits() (n int64, neg bool) {
	r.space()
	if !r.ok {
		return 0, false
	}
	if r.i < len(r.data) && r.data[r.i] == '-' {
		neg = true
		r.i++
	}
	start := r.i
	for r.i < len(r.data) && r.data[r.i] >= '0' && r.data[r.i] <= '9' {
		n = n*10 + int64(r.data[r.i]-'0')
		r.i++
		if r.i-start > maxDigits {
			r.ok = false
			return 0, false
		}
	}
	switch {
	case r.i == start, r.data[start] == '0' && r.i-start > 1:
		r.ok = false
	case r.i < len(r.data) && (r.data[r.i] == '.' || r.data[r.i] == 'e' || r.data[r.i] == 'E'):
		r.ok = false // a float, which encoding/json refuses for an integer
	}
	return n, neg
}

// Int reads an integer that fits in bits bits, signed.
func (r *Reader) Int(bits int) int64 {
	n, neg := r.digits()
	if neg {
		n = -n
	}
	if limit := int64(1) << (bits - 1); bits < 64 && (n < -limit || n >= limit) {
		r.ok = false
	}
	if !r.ok {
		return 0
	}
	return n
}

// Uint reads an integer that fits in bits bits, unsigned.
func (r *Reader) Uint(bits int) uint64 {
	n, neg := r.digits()
	if neg || (bits < 64 && uint64(n) >= 1<<bits) {
		r.ok = false
	}
	if !r.ok {
		return 0
	}
	return uint64(n)
}

// Text reads a string into a value that encoding/json would decode with
// its UnmarshalText method; the method's error fails the Reader.
func (r *Reader) Text(v encoding.TextUnmarshaler) {
	b := r.text()
	if r.ok && v.UnmarshalText(b) != nil {
		r.ok = false
	}
}

// Unmarshaler reads any value (but null) into a value that encoding/json
// would decode with its UnmarshalJSON method, passing it the same bytes;
// the method's error fails the Reader.
func (r *Reader) Unmarshaler(v json.Unmarshaler) {
	raw := r.raw()
	if r.ok && v.UnmarshalJSON(raw) != nil {
		r.ok = false
	}
}

// Time and Decimal are Unmarshaler for the two such types decoded most.
func (r *Reader) Time(t *time.Time)          { r.Unmarshaler(t) }
func (r *Reader) Decimal(d *decimal.Decimal) { r.Unmarshaler(d) }

// RawMessage reads any value (but null) as its bytes, copied.
func (r *Reader) RawMessage(m *json.RawMessage) {
	raw := r.raw()
	if r.ok {
		*m = append((*m)[:0], raw...)
	}
}

// maxDepth bounds the nesting of a value read by raw (encoding/json's own
// bound is 10,000).
const maxDepth = 64

// raw reads any JSON value but null, checking it as encoding/json would,
// and returns its bytes. Strings may have escapes here: they are kept as
// they are.
func (r *Reader) raw() []byte {
	r.space()
	start := r.i
	if !r.ok || r.i >= len(r.data) || r.data[r.i] == 'n' {
		r.ok = false
		return nil
	}
	r.skip(0)
	if !r.ok {
		return nil
	}
	return r.data[start:r.i]
}

// skip reads a value of any kind at nesting depth, checking it.
func (r *Reader) skip(depth int) {
	if depth > maxDepth {
		r.ok = false
		return
	}
	switch c := r.peek(); {
	case c == '{':
		r.i++
		if r.peek() == '}' {
			r.i++
			return
		}
		for r.ok {
			if r.peek() != '"' {
				r.ok = false
				return
			}
			r.skipString()
			r.byte(':')
			r.skip(depth + 1)
			if r.peek() == '}' {
				r.i++
				return
			}
			r.byte(',')
		}
	case c == '[':
		r.i++
		if r.peek() == ']' {
			r.i++
			return
		}
		for r.ok {
			r.skip(depth + 1)
			if r.peek() == ']' {
				r.i++
				return
			}
			r.byte(',')
		}
	case c == '"':
		r.skipString()
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		r.skipNumber()
	default:
		r.ok = false
	}
}

// skipString reads a string at r.i, escapes and all, checking it as
// encoding/json does (bytes that are not UTF-8 are allowed).
func (r *Reader) skipString() {
	for j := r.i + 1; j < len(r.data); j++ {
		switch c := r.data[j]; {
		case c == '"':
			r.i = j + 1
			return
		case c < 0x20:
			r.ok = false
			return
		case c == '\\':
			j++
			if j == len(r.data) {
				r.ok = false
				return
			}
			switch r.data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(r.data) {
					r.ok = false
					return
				}
				for _, h := range r.data[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						r.ok = false
						return
					}
				}
				j += 4
			default:
				r.ok = false
				return
			}
		}
	}
	r.ok = false
}

// skipNumber reads a number at r.i with JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *Reader) skipNumber() {
	d := r.data
	i := r.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		r.ok = false
		return
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			r.ok = false
			return
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			r.ok = false
			return
		}
	}
	r.i = i
}
