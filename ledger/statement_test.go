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

// TestReadEnds: what a statement reads of an entry, its head and its
// deltas past the lien and the charge, is what decoding it whole gives;
// bytes laid out otherwise (an entry of an older ingot, or "deltas" only
// inside a record's value) are decoded whole instead.
func TestReadEnds(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job := JobRef{JobID: "j1", Machine: "hpc1", Project: "chem.lab1", Account: "chem", User: "amy"}
	deltas := []Delta{{Allocation: 1, Account: "chem", Amount: decimal.RequireFromString("-60.00"), Deposited: decimal.Zero},
		{Allocation: 2, Account: "chem", Amount: decimal.RequireFromString("-0.50"), Deposited: decimal.Zero}}
	charge := Entry{Seq: 7, Time: at, Actor: "slurm", RequestID: "r-7", Kind: KindCharge, Node: "chem.lab1", Ref: "j1",
		Description: `a "quoted", comma,"description"`,
		Lien:        &Lien{ID: 3, JobRef: job, State: LienSettled, Detail: json.RawMessage(`{"deltas":[{"allocation":9}],"x":","}`)},
		Charge:      &Charge{ID: 4, JobRef: job, Detail: json.RawMessage(`{"items":[{"deltas":"no"}]}`)},
		Deltas:      deltas, Answer: strings.Repeat("ab", 32), PrevHash: strings.Repeat("0f", 32)}
	first := Entry{Seq: 1, Time: at, Actor: "root", Kind: KindDeposit, Node: "chem", Deltas: deltas[:1]}
	for _, e := range []Entry{charge, first} {
		got, ok := readEnds(jsonBody(t, e))
		want := Entry{Seq: e.Seq, Time: e.Time, Actor: e.Actor, RequestID: e.RequestID, Kind: e.Kind, Node: e.Node, Ref: e.Ref,
			Description: e.Description, Deltas: e.Deltas}
		if !ok || !sameJSON(got, want) {
			t.Errorf("entry %d: %+v %v, want %+v", e.Seq, got, ok, want)
		}
	}

	// "deltas" in a record's value, none in the entry: not read as its.
	record := Entry{Seq: 8, Time: at, Actor: "root", Kind: KindRecord, Node: "chem",
		Record: &Record{Kind: "k", Key: "x", Value: json.RawMessage(`{"deltas":[{"allocation":1,"account":"chem","amount":"5","deposited":"5"}]}`)}}
	// An older layout: the deltas before the lien.
	old := jsonBody(t, Entry{Seq: 9, Time: at, Actor: "slurm", Kind: KindCharge, Node: "chem", Deltas: deltas})
	old = bytes.Replace(old, []byte(`,"prev_hash"`), []byte(`,"lien":{"id":3},"prev_hash"`), 1)
	body := jsonBody(t, record)
	for name, b := range map[string][]byte{"record": body, "older layout": old} {
		if got, ok := readEnds(b); ok {
			t.Errorf("%s: read as %+v", name, got)
		}
		m := decodeMoves(StoredEntry{Seq: map[string]uint64{"record": 8, "older layout": 9}[name], Body: b})
		var whole Entry
		if err := json.Unmarshal(b, &whole); err != nil || m.err != nil || !reflect.DeepEqual(m.e.Deltas, whole.Deltas) {
			t.Errorf("%s: decoded %+v (%v), want the deltas %+v (%v)", name, m.e.Deltas, m.err, whole.Deltas, err)
		}
	}
}

// jsonBody is e's body in the JSON layout, which ingot wrote before
// schema 12.
func jsonBody(t testing.TB, e Entry) []byte {
	t.Helper()
	e.Hash = ""
	body, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// FuzzDecodeMoves: what a statement reads of a stored entry never panics,
// and, of any body the ledger writes (an entry decoded from the fuzzer's
// bytes, sealed again), is what decoding it whole gives: its head and its
// deltas, or nothing when it moved no credits.
func FuzzDecodeMoves(f *testing.F) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, e := range []Entry{
		{Seq: 2, Time: at, Actor: "a", Kind: KindDeposit, Node: "chem",
			Deltas: []Delta{{Allocation: 1, Account: "chem", Amount: decimal.RequireFromString("10.5"), Deposited: decimal.RequireFromString("10.5")}}},
		{Seq: 2, Time: at, Actor: "s", Kind: KindCharge, Node: "chem.lab1", Lien: &Lien{ID: 1, Detail: json.RawMessage(`{"deltas":[]}`)},
			Charge: &Charge{ID: 1}, Deltas: []Delta{{Allocation: 1, Account: "chem", Amount: decimal.RequireFromString("-1")}}, Answer: "ab"},
	} {
		seed, _ := json.Marshal(e)
		f.Add(seed)
		seed, _ = encodeEntry(e)
		f.Add(seed)
	}
	f.Add([]byte(`{"seq":2,"record":{"value":{"deltas":[{"allocation":1}]}},"prev_hash":""}`))
	f.Add([]byte(`{"seq":2,"deltas":[{"amount":"1"}],"prev_hash":"0f"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		decodeMoves(StoredEntry{Seq: 2, Body: raw}) // any bytes: never a panic
		whole, err := DecodeEntry(StoredEntry{Seq: 2, Body: raw})
		if err != nil {
			return
		}
		se, err := SealEntry(whole)
		if err != nil {
			return
		}
		if whole, err = DecodeEntry(se); err != nil {
			t.Fatalf("decode of own encoding %s: %v", se.Body, err)
		}
		m := decodeMoves(se)
		if len(whole.Deltas) == 0 {
			if m.err != nil || len(m.e.Deltas) > 0 {
				t.Fatalf("moves of %s, which moved no credits: %+v (%v)", se.Body, m.e.Deltas, m.err)
			}
			return
		}
		want := Entry{Seq: whole.Seq, Time: whole.Time, Actor: whole.Actor, RequestID: whole.RequestID, Kind: whole.Kind,
			Node: whole.Node, Ref: whole.Ref, Description: whole.Description, Deltas: whole.Deltas}
		got := m.e
		got.Settings, got.NodeState, got.UserState, got.Machine, got.Lien, got.Charge, got.Record, got.Terms = nil, nil, nil, nil, nil, nil, nil, nil
		got.Answer, got.PrevHash, got.Hash = "", "", ""
		if m.err != nil || mustJSON(t, got) != mustJSON(t, want) {
			t.Fatalf("moves of %s: %s (%v), want %s", se.Body, mustJSON(t, got), m.err, mustJSON(t, want))
		}
	})
}
