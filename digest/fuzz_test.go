package digest

import (
	"encoding/json"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// FuzzContact: any record value is refused as corrupt or read as a
// contact; any change of it is refused or leaves a contact whose
// addresses check, and which reads back the same.
func FuzzContact(f *testing.F) {
	f.Add([]byte(`{"user":"amy","email":"amy@example.org"}`), []byte(`{"webhook":"https://chat.example.org/x","off":true}`))
	f.Add([]byte(`{"user":"bob","off":true}`), []byte(`{"email":"Bob <bob@example.org>"}`))
	f.Add([]byte(`[]`), []byte(`{"email":""}`))
	f.Fuzz(func(t *testing.T, value, change []byte) {
		c, err := decodeContact(ledger.Record{Kind: contactKind, Key: "k", Value: value})
		if err != nil {
			return
		}
		var ch ContactChange
		if json.Unmarshal(change, &ch) != nil {
			return
		}
		next := c.Apply(ch)
		if next.check() != nil {
			return
		}
		b, err := json.Marshal(next)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeContact(ledger.Record{Kind: contactKind, Key: "k", Value: b})
		if err != nil || again != next || again.check() != nil {
			t.Fatalf("%+v reads back as %+v (%v)", next, again, err)
		}
	})
}

// FuzzState: any record value is refused as corrupt or read as what a
// recipient was told, which encodes and reads back the same.
func FuzzState(f *testing.F) {
	f.Add([]byte(`{"last":"2026-11-29T07:00:00Z","told":{"low/chem":{"level":2,"at":"2026-11-29T07:00:00Z"}}}`))
	f.Add([]byte(`{"told":null}`))
	f.Add([]byte(`{"last":"not a time"}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		s, err := decodeState(ledger.Record{Kind: stateKind, Key: "k", Value: value})
		if err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			return // a time json cannot write (a year past 9999): never one the bank wrote
		}
		again, err := decodeState(ledger.Record{Kind: stateKind, Key: "k", Value: b})
		if err != nil || !again.Last.Equal(s.Last) || len(again.Told) != len(s.Told) {
			t.Fatalf("%+v reads back as %+v (%v)", s, again, err)
		}
	})
}
