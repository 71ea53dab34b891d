package peer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/peer"
)

// FuzzParsePeriod: a period's name is refused or read as a span of one
// day or one month that begins at a UTC midnight and is named as given.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"2026-11-28", "2026-11", "2026-02-29", "0000-01", "9999-12-31", "", "2026-1-1", "2026-11-28Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := peer.ParsePeriod(s)
		if err != nil {
			return
		}
		if p.Name != s || p.From.Location() != time.UTC || !p.To.After(p.From) || p.From.Hour() != 0 {
			t.Fatalf("%q: %+v", s, p)
		}
		if days := p.To.Sub(p.From).Hours() / 24; days != 1 && (days < 28 || days > 31) {
			t.Fatalf("%q: %v days", s, days)
		}
	})
}

// FuzzBeganAt: any id gives a time, the one recorded unless it is a
// transaction id's.
func FuzzBeganAt(f *testing.F) {
	recorded := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{"tx-18bc7a3f0e5d2c00aabbccddeeff0011", "tx-", "tx-ffffffffffffffffffffffffffffffff", "job-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got := peer.BeganAt(id, recorded)
		if !strings.HasPrefix(id, "tx-") && !got.Equal(recorded) {
			t.Fatalf("%q: %s", id, got)
		}
	})
}
