package boltstore

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// FuzzEntryTime: reading an entry's time never panics; on any JSON object
// with one "time" key it reads what json.Unmarshal reads, and it reads the
// time of every body the ledger writes (seq first, then time).
func FuzzEntryTime(f *testing.F) {
	f.Add([]byte(`{"seq":7,"time":"2026-11-26T10:00:00Z","kind":"deposit"}`), "2026-11-26T10:00:00.5Z")
	f.Add([]byte(`{"a":{"time":"x"},"time":"2026-01-01T00:00:00Z"}`), "0001-01-01T00:00:00Z")
	f.Add([]byte(`{"seq":1}`), "")
	f.Fuzz(func(t *testing.T, body []byte, stamp string) {
		got, err := entryTime(body)
		var want struct {
			Time time.Time `json:"time"`
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(body, &want) == nil && json.Unmarshal(body, &keys) == nil && keys["time"] != nil &&
			bytes.Count(body, []byte(`"time"`)) == 1 {
			if err != nil || !got.Equal(want.Time) {
				t.Errorf("entryTime(%q) = %v, %v; json.Unmarshal reads %v", body, got, err, want.Time)
			}
		}
		tm, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || tm.Year() < 0 || tm.Year() > 9999 {
			return
		}
		written, err := json.Marshal(ledger.Entry{Seq: 3, Time: tm, Kind: ledger.KindDeposit, Node: string(body)})
		if err != nil {
			return
		}
		if got, err := entryTime(written); err != nil || !got.Equal(tm) {
			t.Errorf("entryTime of a written entry: %v, %v; want %v", got, err, tm)
		}
	})
}
