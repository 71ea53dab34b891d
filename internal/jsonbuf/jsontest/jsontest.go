// Package jsontest checks hand-written JSON encoders (package jsonbuf)
// and decoders (package jsonread) against encoding/json: Fill sets every
// field of a value to random, tricky values, and Same wants an encoder's
// bytes to be encoding/json's; FillPlain, SameDecoding and Mutate are for
// the decoders.
//
// The reference is a "plain" type: a defined type with the fields and tags
// of the encoded one but none of its methods (type plainLien Lien), which
// encoding/json encodes by reflection. A field added to a type without its
// line in the encoder then fails the test.
package jsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// Same wants got and gotErr, an encoder's answer, to be what
// json.Marshal(plain) gives: the same bytes, or an error for both.
func Same(t testing.TB, what string, got []byte, gotErr error, plain any) {
	t.Helper()
	want, err := json.Marshal(plain)
	switch {
	case err != nil && gotErr == nil:
		t.Fatalf("%s: encoding/json refuses it (%v), the encoder gave %s", what, err, got)
	case err == nil && gotErr != nil:
		t.Fatalf("%s: the encoder refuses it (%v), encoding/json gave %s", what, gotErr, want)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// Appends checks an AppendJSON method: what it appends to a slice that
// holds something already must be what Same wants, the slice's bytes kept.
func Appends(t testing.TB, what string, appendJSON func(dst []byte) ([]byte, error), plain any) {
	t.Helper()
	const before = "before:"
	got, err := appendJSON([]byte(before))
	if err == nil && !bytes.HasPrefix(got, []byte(before)) {
		t.Fatalf("%s: appended to %q gives %s", what, before, got)
	}
	if err == nil {
		got = got[len(before):]
	}
	Same(t, what, got, err, plain)
}

var (
	trickyStrings = []string{"", "chem", "chem.lab1", "job-1.hpc1", `quo"te`, `back\slash`, "a<b>&c", "tab\there",
		"new\nline", "\x00\x1f", "\b\f\r", "3 × 4 → 12", "café", "\u2028\u2029", "\xff\xfeinvalid", "日本", "emoji 🎉", "del\x7f"}
	trickyDecimals = []string{"0", "1", "-1", "0.01", "-7200", "14400", "1000000000000", "123456789.123456789", "1e-8", "-0.5",
		"1.00", "-0.000", "5e3", "-9223372036854775808", "0.9223372036854775807", "98765432109876543210.0123456789", "-1e-30"}
	trickyDetails = []json.RawMessage{nil, {}, json.RawMessage(`{"policy":"DEBITSUCCESSFULWC","quoted":"14400"}`), json.RawMessage(`[1,2,{"a":"b"}]`), json.RawMessage(`"x"`)}
)

// Fill sets v (and everything below it) to random values; numbers are
// often zero, and pointers, slices and maps are sometimes left nil, or
// made empty, to exercise omitempty;
// times are sometimes zero (omitzero) and rarely beyond year 9999 (which
// encoding/json refuses). Small unsigned integers (the enumerations) are
// mostly below 11 and sometimes far out of range.
func Fill(r *rand.Rand, v reflect.Value) {
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(randomTime(r)))
		return
	case decimal.Decimal:
		v.Set(reflect.ValueOf(decimal.RequireFromString(trickyDecimals[r.IntN(len(trickyDecimals))])))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(trickyDetails[r.IntN(len(trickyDetails))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(trickyStrings[r.IntN(len(trickyStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int32, reflect.Int64:
		if r.IntN(4) > 0 { // else zero, for omitempty
			v.SetInt(r.Int64N(1000) - 10)
		}
	case reflect.Uint8:
		v.SetUint(uint64(r.IntN(11)))
		if r.IntN(40) == 0 {
			v.SetUint(200)
		}
	case reflect.Uint64:
		if r.IntN(4) > 0 {
			v.SetUint(r.Uint64() >> r.IntN(64))
		}
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.Set(reflect.New(v.Type().Elem()))
			Fill(r, v.Elem())
		}
	case reflect.Slice:
		if n := size(r); n >= 0 {
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				Fill(r, v.Index(i))
			}
		}
	case reflect.Map:
		if n := size(r); n >= 0 {
			v.Set(reflect.MakeMap(v.Type()))
			for range n {
				key, value := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				Fill(r, key)
				Fill(r, value)
				v.SetMapIndex(key, value)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() { // what encoding/json sees
				Fill(r, v.Field(i))
			}
		}
	default:
		panic("jsontest.Fill: no random values of kind " + v.Kind().String())
	}
}

// size is the length of a random slice or map: -1 for nil, else 0 to 3.
func size(r *rand.Rand) int {
	switch r.IntN(3) {
	case 0:
		return -1
	case 1:
		return 0
	default:
		return 1 + r.IntN(3)
	}
}

func randomTime(r *rand.Rand) time.Time {
	switch r.IntN(100) {
	case 0:
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12:
		return time.Time{}
	}
	t := time.Unix(r.Int64N(1<<35), r.Int64N(1e9)).UTC()
	if r.IntN(3) == 0 {
		t = t.Truncate(time.Second)
	}
	return t
}

// FillPlain is Fill with what a hand-written decoder (package jsonread)
// reads itself rather than leave to encoding/json: strings (and map keys)
// of plain ASCII without escapes, unsigned integers of at most 18 digits.
// A decoder must read every value FillPlain makes, so that a field added
// to a type without its line in the decoder fails a test.
func FillPlain(r *rand.Rand, v reflect.Value) {
	Fill(r, v)
	plain(v)
}

// plain rewrites the strings and large unsigned integers below v.
func plain(v reflect.Value) {
	switch v.Interface().(type) {
	case time.Time, decimal.Decimal, json.RawMessage:
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(plainWords[len(v.String())%len(plainWords)])
	case reflect.Uint64:
		v.SetUint(v.Uint() % 1e18)
	case reflect.Pointer:
		if !v.IsNil() {
			plain(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			plain(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i, iter := 0, v.MapRange(); iter.Next(); i++ {
			key, value := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			key.Set(iter.Key())
			value.Set(iter.Value())
			if key.Kind() == reflect.String {
				key.SetString(fmt.Sprintf("key%d", i)) // distinct
			}
			plain(value)
			m.SetMapIndex(key, value)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				plain(v.Field(i))
			}
		}
	}
}

var plainWords = []string{"", "chem", "chem.lab1", "job-1.hpc1", "amy", "hpc1", "Processors = 4 dedicated", "café", "日本"}

// SameDecoding checks a hand-written decoder (package jsonread) against
// encoding/json on data: whenever fast accepts data, strict (the
// encoding/json decoding it stands for) must accept it too, with a deeply
// equal value; and when fast refuses, it must leave its value zero. It
// reports whether fast accepted.
func SameDecoding[T any](t testing.TB, what string, data []byte, fast func([]byte, *T) bool, strict func([]byte, *T) error) bool {
	t.Helper()
	var got, want T
	ok := fast(data, &got)
	err := strict(data, &want)
	switch {
	case !ok:
		if !reflect.DeepEqual(got, *new(T)) {
			t.Fatalf("%s: the fast decoder refused %q but left %+v", what, data, got)
		}
	case err != nil:
		t.Fatalf("%s: the fast decoder accepted %q, encoding/json refuses it: %v", what, data, err)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("%s: %q:\nfast decoder %+v\nencoding/json %+v", what, data, got, want)
	}
	return ok
}

// RandomDecodings checks a hand-written decoder against encoding/json
// (SameDecoding) on n random values of T encoded by json.Marshal, and on
// 20 random changes (Mutate) of each. Every other value holds plain values
// only (FillPlain), which the decoder must read itself: refusing one means
// a field it has no line for.
func RandomDecodings[T any](t *testing.T, r *rand.Rand, n int, fast func([]byte, *T) bool, strict func([]byte, *T) error) {
	t.Helper()
	for i := range n {
		var v T
		fill := Fill
		if i%2 == 0 {
			fill = FillPlain
		}
		fill(r, reflect.ValueOf(&v).Elem())
		data, err := json.Marshal(v)
		if err != nil {
			continue // an enumeration out of range
		}
		what := fmt.Sprintf("value %d", i)
		if !SameDecoding(t, what, data, fast, strict) && i%2 == 0 {
			t.Fatalf("%s: the fast decoder refuses %s, of plain values: a field it does not read?", what, data)
		}
		for j := range 20 {
			SameDecoding(t, fmt.Sprintf("%s, changed %d", what, j), Mutate(r, data), fast, strict)
		}
	}
}

// Mutate returns a copy of data with one to three random bytes replaced,
// inserted or removed, mostly JSON's own punctuation, digits and letters,
// for checking decoders on inputs near valid ones.
func Mutate(r *rand.Rand, data []byte) []byte {
	const alphabet = `{}[]":,.-+0123456789eE tfnul\"x` + "\x00\xff\n"
	out := append([]byte(nil), data...)
	for range 1 + r.IntN(3) {
		i := r.IntN(len(out) + 1)
		c := alphabet[r.IntN(len(alphabet))]
		switch r.IntN(3) {
		case 0:
			if i < len(out) {
				out[i] = c
			}
		case 1:
			out = slices.Insert(out, i, c)
		default:
			if i < len(out) {
				out = slices.Delete(out, i, i+1)
			}
		}
	}
	return out
}
