package boltstore

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

func TestRequestRecordRoundTrip(t *testing.T) {
	r := ledger.RequestRecord{ContentHash: strings.Repeat("ab", 32), Result: []byte(`{"ok":true}`), Seq: 42,
		Time: time.Date(2026, 11, 22, 5, 0, 0, 123000, time.UTC)}
	hash, err := contentHash(r)
	if err != nil {
		t.Fatal(err)
	}
	raw := packRequest(r, hash, r.Result)
	got, err := unpackRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentHash != r.ContentHash || got.Seq != r.Seq || !got.Time.Equal(r.Time) || !bytes.Equal(got.Result, r.Result) {
		t.Errorf("round trip: %+v, want %+v", got, r)
	}
	if _, err := contentHash(ledger.RequestRecord{ContentHash: "not hex"}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("bad content hash: %v, want ErrInvalid", err)
	}
	if _, err := unpackRequest(raw[:requestHeader-1]); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("truncated record: %v, want ErrCorrupt", err)
	}
}

// FuzzUnpackRequest feeds arbitrary request records to their decoder: it
// must refuse a truncated one with ErrCorrupt or decode one that packs back
// to the same bytes.
func FuzzUnpackRequest(f *testing.F) {
	good := packRequest(ledger.RequestRecord{Seq: 1, Time: time.Unix(0, 5).UTC()}, bytes.Repeat([]byte{0x0f}, 32), []byte(`{}`))
	f.Add(good)
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := unpackRequest(raw)
		if err != nil {
			if !errors.Is(err, ledger.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		hash, err := contentHash(r)
		if err != nil {
			t.Fatal(err)
		}
		if again := packRequest(r, hash, r.Result); !bytes.Equal(again, raw) {
			t.Fatalf("repacking %x gave %x, %v", raw, again, err)
		}
	})
}
