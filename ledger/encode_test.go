package ledger

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// The plain types have the fields and tags of the ledger's types but none
// of their methods, so encoding/json encodes them by reflection: the
// reference the hand-written encoders must match. (Their nested liens and
// charges use the hand-written encoders, which are checked on their own.)
type (
	plainLien       Lien
	plainCharge     Charge
	plainAllocation Allocation
	plainEntry      Entry
)

// TestEncodersMatchEncodingJSON fills every field of entries, liens,
// charges and allocations with random values (tricky strings, decimals,
// times, empty and nil slices, unset optional fields) and wants the
// hand-written encoders to give encoding/json's bytes.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var e Entry
		fill(r, reflect.ValueOf(&e).Elem())
		e.Hash = "" // as Encode has it
		body, _, err := e.Encode()
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		sameBytes(t, "entry", body, plainEntry(e))
		if e.Lien != nil {
			got, err := e.Lien.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "lien", got, plainLien(*e.Lien))
		}
		if e.Charge != nil {
			got, err := e.Charge.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "charge", got, plainCharge(*e.Charge))
		}
		var a Allocation
		fill(r, reflect.ValueOf(&a).Elem())
		got, err := EncodeAllocation(a)
		if err != nil {
			t.Fatal(err)
		}
		sameBytes(t, "allocation", got, plainAllocation(a))
		// What embeds an allocation still encodes all its fields.
		status := AllocationStatus{Allocation: a, Reserved: a.Amount, Active: true}
		got, err = json.Marshal(status)
		if err != nil {
			t.Fatal(err)
		}
		type plainStatus struct {
			plainAllocation
			Reserved decimal.Decimal `json:"reserved"`
			Active   bool            `json:"active"`
		}
		sameBytes(t, "allocation status", got, plainStatus{plainAllocation(a), a.Amount, true})
	}
}

func sameBytes(t *testing.T, what string, got []byte, plain any) {
	t.Helper()
	want, err := json.Marshal(plain)
	if err != nil {
		t.Fatalf("%s: encoding/json: %v", what, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// TestEncodersRefuseWhatEncodingJSONRefuses: a time outside years 0 to
// 9999 is an error, as in encoding/json.
func TestEncodersRefuseWhatEncodingJSONRefuses(t *testing.T) {
	l := Lien{Created: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := l.MarshalJSON(); err == nil {
		t.Error("a lien created in year 10000 encoded")
	}
	if _, _, err := (Entry{Lien: &l}).Encode(); err == nil {
		t.Error("an entry with a lien created in year 10000 encoded")
	}
}

var (
	trickyStrings = []string{"", "chem", "chem.lab1", "job-1.hpc1", `quo"te`, `back\slash`, "a<b>&c", "tab\there",
		"new\nline", "\x00\x1f", "café", "\u2028\u2029", "\xff\xfeinvalid", "日本", "emoji 🎉", "del\x7f"}
	trickyDecimals = []string{"0", "1", "-1", "0.01", "-7200", "14400", "1000000000000", "123456789.123456789", "1e-8", "-0.5"}
	trickyDetails  = []json.RawMessage{nil, {}, json.RawMessage(`{"policy":"DEBITSUCCESSFULWC","quoted":"14400"}`), json.RawMessage(`[1,2,{"a":"b"}]`), json.RawMessage(`"x"`)}
)

// fill sets v (and everything below it) to random values; pointers and
// slices are sometimes left nil, or made empty, to exercise omitempty.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Interface().(type) {
	case time.Time:
		var t time.Time // the zero time, which omitzero omits
		if r.IntN(8) > 0 {
			t = time.Unix(r.Int64N(1<<35), r.Int64N(1e9)).UTC()
			if r.IntN(3) == 0 {
				t = t.Truncate(time.Second)
			}
		}
		v.Set(reflect.ValueOf(t))
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
		v.SetInt(r.Int64N(1000) - 10)
	case reflect.Uint64:
		if r.IntN(4) > 0 {
			v.SetUint(r.Uint64() >> r.IntN(64))
		}
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(r, v.Elem())
		}
	case reflect.Slice:
		switch r.IntN(3) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.IntN(3)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fill(r, v.Index(i))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	default:
		panic("fill: no random values of kind " + v.Kind().String())
	}
}
