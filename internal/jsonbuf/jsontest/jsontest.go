// Package jsontest checks hand-written JSON encoders (package jsonbuf)
// against encoding/json: Fill sets every field of a value to random,
// tricky values, and Same wants an encoder's bytes to be encoding/json's.
//
// The reference is a "plain" type: a defined type with the fields and tags
// of the encoded one but none of its methods (type plainLien Lien), which
// encoding/json encodes by reflection. A field added to a type without its
// line in the encoder then fails the test.
package jsontest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
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
			Fill(r, v.Field(i))
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
