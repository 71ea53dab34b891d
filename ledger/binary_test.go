package ledger

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestBinaryLayout: an entry with every part set, in the binary layout,
// decodes to what it was (compared as JSON, as the API shows it), and its
// head and moves are read from it alone; a body cut short anywhere, or
// with a byte after its end, is refused as corrupt.
func TestBinaryLayout(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	job := JobRef{JobID: "4242", Machine: "hpc1", Project: "chem.lab1", Account: "chem", User: "amy"}
	big := decimal.RequireFromString("-123456789012345678901234567890.125")
	e := Entry{Seq: 7, Time: at, Actor: "slurm", RequestID: "r-7", Kind: KindCharge, Node: "chem.lab1", Ref: "4242",
		Description: "a \x00 description", Settings: &Settings{Precision: 3},
		NodeState: &Node{Name: "chem.lab1", Active: true}, UserState: &User{Name: "amy"}, Machine: &Machine{Name: "hpc1"},
		Record: &Record{Kind: "rate", Key: "NBM", Value: json.RawMessage(`{"x":1}`)},
		Terms: []AllocationTerms{{ID: 1, Account: "chem", CreditLimit: decimal.RequireFromString("50.00"), Start: at,
			Machine: "hpc1", Description: "grant", Created: at.In(time.FixedZone("", -5*3600))}},
		Lien: &Lien{ID: 3, JobRef: job, Amount: decimal.NewFromInt(120), Holds: []Hold{{Allocation: 1, Amount: big}},
			Charged: decimal.Zero, Created: at, Expires: at.Add(time.Hour), State: LienSettled, Detail: json.RawMessage(`{"policy":"x"}`)},
		Charge: &Charge{ID: 4, JobRef: job, Lien: 3, Amount: decimal.RequireFromString("60.5"), Debits: []Hold{},
			Overdrawn: decimal.Zero, Refunded: decimal.Zero, Final: true, Time: at, Detail: json.RawMessage(`[1,2]`)},
		Deltas: []Delta{{Allocation: 1, Account: "chem", Amount: decimal.RequireFromString("-60.50"), Deposited: decimal.Zero}},
		Answer: strings.Repeat("ab", 32), PrevHash: "not hex"}
	se, err := SealEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if !binaryBody(se.Body) {
		t.Fatalf("body %q is not in the binary layout", se.Body)
	}
	got, err := DecodeEntry(se)
	if err != nil {
		t.Fatal(err)
	}
	e.Hash = got.Hash
	if mustJSON(t, got) != mustJSON(t, e) {
		t.Errorf("decoded\n%s\nwant\n%s", mustJSON(t, got), mustJSON(t, e))
	}
	if head, err := ReadEntryHead(se.Body); err != nil || !head.Time.Equal(at) || head.Actor != "slurm" || head.RequestID != "r-7" {
		t.Errorf("head %+v, %v", head, err)
	}
	if m := decodeMoves(se); m.err != nil || len(m.e.Deltas) != 1 || !m.e.Deltas[0].Amount.Equal(e.Deltas[0].Amount) || m.e.Lien != nil {
		t.Errorf("moves %+v, %v", m.e, m.err)
	}
	for n := range len(se.Body) {
		if _, err := DecodeEntry(StoredEntry{Seq: 7, Body: se.Body[:n]}); err == nil {
			t.Fatalf("the body cut to %d of its %d bytes decodes", n, len(se.Body))
		}
	}
	if _, err := DecodeEntry(StoredEntry{Seq: 7, Body: append(bytes.Clone(se.Body), 0)}); err == nil || !strings.Contains(err.Error(), "after its end") {
		t.Errorf("a byte after the end: %v", err)
	}
	e.Lien.Detail = json.RawMessage(`{"not json`)
	if _, err := SealEntry(e); err == nil {
		t.Error("an entry whose lien's detail is not JSON was encoded")
	}
}

// TestBinaryLayoutCoversEveryField: the types the binary layout writes
// field by field have the fields it writes, no more: a field added to one
// needs a new layout (binary.go).
func TestBinaryLayoutCoversEveryField(t *testing.T) {
	for _, c := range []struct {
		v      any
		fields int
	}{
		{Entry{}, 20 /* with Hash, the hash of the others */}, {Lien{}, 9}, {Charge{}, 11}, {Hold{}, 2}, {Delta{}, 4}, {AllocationTerms{}, 8}, {JobRef{}, 5},
		{Allocation{}, 3}, {entryRest{}, 5},
	} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.fields {
			t.Errorf("%T has %d fields, the binary layout writes %d", c.v, n, c.fields)
		}
	}
}

// FuzzDecodeAllocation: an allocation's binary layout never panics on
// any bytes, and what it accepts encodes to bytes that decode to the same
// (whose own encoding is the same bytes).
func FuzzDecodeAllocation(f *testing.F) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Add(AppendAllocation(nil, Allocation{AllocationTerms: AllocationTerms{ID: 1, Account: "chem", Start: at, Created: at},
		Amount: decimal.RequireFromString("10.50"), Deposited: decimal.New(-1, 300)}))
	f.Add([]byte{bodyBinary})
	f.Add([]byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := DecodeAllocation(raw)
		if err != nil {
			return
		}
		enc := AppendAllocation(nil, a)
		b, err := DecodeAllocation(enc)
		if err != nil {
			t.Fatalf("%x, the encoding of %+v, does not decode: %v", enc, a, err)
		}
		if again := AppendAllocation(nil, b); !bytes.Equal(again, enc) {
			t.Fatalf("%+v encodes to %x, which decodes to %+v, which encodes to %x", a, enc, b, again)
		}
	})
}
