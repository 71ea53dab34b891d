package peer_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestCompare: each way two banks' records of a transaction can differ is
// found, and what agrees is counted, whatever the operation.
func TestCompare(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	x := func(id string, dir peer.Direction, state peer.State, amount int64) peer.Exchanged {
		return peer.Exchanged{ID: id, Peer: "p", Direction: dir, Op: "any", State: state, Amount: decimal.NewFromInt(amount), Digest: "d", Began: at}
	}
	sent, recv := peer.Sent, peer.Received
	done, pending, refused, withdrawn := peer.StateDone, peer.StatePending, peer.StateRefused, peer.StateWithdrawn
	other := x("a", recv, done, 10)
	other.Digest = "e"
	for _, c := range []struct {
		name        string
		here, there []peer.Exchanged
		problem     string
	}{
		{"sent and applied", []peer.Exchanged{x("a", sent, done, 10)}, []peer.Exchanged{x("a", recv, done, 10)}, ""},
		{"received and done there", []peer.Exchanged{x("a", recv, done, 10)}, []peer.Exchanged{x("a", sent, done, 10)}, ""},
		{"refused, nothing there", []peer.Exchanged{x("a", sent, refused, 10)}, nil, ""},
		{"refused there, nothing here", nil, []peer.Exchanged{x("a", sent, refused, 10)}, ""},
		{"done, missing there", []peer.Exchanged{x("a", sent, done, 10)}, nil, "done here; the peer has no record of applying it"},
		{"pending, not yet there", []peer.Exchanged{x("a", sent, pending, 10)}, nil, "pending: not applied at the peer yet"},
		{"pending, applied there", []peer.Exchanged{x("a", sent, pending, 10)}, []peer.Exchanged{x("a", recv, done, 10)}, "pending here; applied at the peer (its answer not recorded here yet)"},
		{"refused, applied there", []peer.Exchanged{x("a", sent, refused, 10)}, []peer.Exchanged{x("a", recv, done, 10)}, "refused here; applied at the peer"},
		{"another amount", []peer.Exchanged{x("a", sent, done, 10)}, []peer.Exchanged{x("a", recv, done, 9)}, "amount 10 sent, 9 applied"},
		{"another body", []peer.Exchanged{x("a", sent, done, 10)}, []peer.Exchanged{other}, "the body applied is not the body sent"},
		{"applied here, unknown there", []peer.Exchanged{x("a", recv, done, 10)}, nil, "applied here; the peer has no record of beginning it"},
		{"applied here, refused there", []peer.Exchanged{x("a", recv, done, 10)}, []peer.Exchanged{x("a", sent, refused, 10)}, "applied here; the peer recorded a refusal"},
		{"applied there, unknown here", nil, []peer.Exchanged{x("a", recv, done, 10)}, "applied at the peer; no record here of beginning it"},
		{"done there, missing here", nil, []peer.Exchanged{x("a", sent, done, 10)}, "done at the peer; no record here of applying it"},
		{"refused, refused there", []peer.Exchanged{x("a", sent, refused, 10)}, []peer.Exchanged{x("a", recv, refused, 0)}, ""},
		{"refused here, refused there", []peer.Exchanged{x("a", recv, refused, 0)}, []peer.Exchanged{x("a", sent, refused, 10)}, ""},
		{"refused here, unknown there", []peer.Exchanged{x("a", recv, refused, 0)}, nil, ""},
		{"refused here, pending there", []peer.Exchanged{x("a", recv, refused, 0)}, []peer.Exchanged{x("a", sent, pending, 10)}, "refused here; still pending at the peer (its answer not recorded there yet)"},
		{"refused here, done there", []peer.Exchanged{x("a", recv, refused, 0)}, []peer.Exchanged{x("a", sent, done, 10)}, "refused here; done at the peer"},
		{"pending, refused there", []peer.Exchanged{x("a", sent, pending, 10)}, []peer.Exchanged{x("a", recv, refused, 0)}, "pending here; refused at the peer (its answer not recorded here yet)"},
		{"done, refused there", []peer.Exchanged{x("a", sent, done, 10)}, []peer.Exchanged{x("a", recv, refused, 0)}, "done here; the peer recorded a refusal"},
		{"refused there, unknown here", nil, []peer.Exchanged{x("a", recv, refused, 0)}, ""},
		{"withdrawn, nothing there", []peer.Exchanged{x("a", sent, withdrawn, 10)}, nil, ""},
		{"withdrawn, withdrawn there", []peer.Exchanged{x("a", sent, withdrawn, 10)}, []peer.Exchanged{x("a", recv, withdrawn, 10)}, ""},
		{"withdrawn, refused there", []peer.Exchanged{x("a", sent, withdrawn, 10)}, []peer.Exchanged{x("a", recv, refused, 0)}, ""},
		{"withdrawn, applied there", []peer.Exchanged{x("a", sent, withdrawn, 10)}, []peer.Exchanged{x("a", recv, done, 10)}, "withdrawn here; applied at the peer (the withdrawal not applied there yet)"},
		{"refused here, withdrawn there", []peer.Exchanged{x("a", recv, refused, 0)}, []peer.Exchanged{x("a", sent, withdrawn, 10)}, ""},
		{"withdrawn here, withdrawn there", []peer.Exchanged{x("a", recv, withdrawn, 0)}, []peer.Exchanged{x("a", sent, withdrawn, 10)}, ""},
		{"withdrawn here, unknown there", []peer.Exchanged{x("a", recv, withdrawn, 0)}, nil, ""},
		{"withdrawn here, done there", []peer.Exchanged{x("a", recv, withdrawn, 0)}, []peer.Exchanged{x("a", sent, done, 10)}, "withdrawn here; done at the peer"},
		{"applied here, withdrawn there", []peer.Exchanged{x("a", recv, done, 10)}, []peer.Exchanged{x("a", sent, withdrawn, 10)}, "applied here; withdrawn at the peer (its withdrawal not applied here yet)"},
		{"withdrawn there, unknown here", nil, []peer.Exchanged{x("a", recv, withdrawn, 0)}, ""},
		{"both sent", []peer.Exchanged{x("a", sent, done, 10)}, []peer.Exchanged{x("a", sent, done, 10)}, "both banks record it as sent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := peer.Compare("p", time.Time{}, time.Time{}, c.here, c.there)
			if c.problem == "" {
				if rec.Matched != 1 || len(rec.Differences) != 0 {
					t.Fatalf("want agreement, got %+v", rec)
				}
				return
			}
			if rec.Matched != 0 || len(rec.Differences) != 1 || rec.Differences[0].Problem != c.problem {
				t.Fatalf("want %q, got %+v", c.problem, rec)
			}
		})
	}
}

func TestBeganAt(t *testing.T) {
	recorded := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := peer.BeganAt("tx-18bc7a3f0e5d2c00aabbccddeeff0011", recorded); !got.Equal(time.Unix(0, 0x18bc7a3f0e5d2c00).UTC()) {
		t.Errorf("a transaction id's time: %s", got)
	}
	for _, id := range []string{"job-1", "tx-zz", "tx-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"} {
		if got := peer.BeganAt(id, recorded); !got.Equal(recorded) {
			t.Errorf("%s: %s, want the time recorded", id, got)
		}
	}
}

func TestParsePeriod(t *testing.T) {
	for s, want := range map[string][2]string{
		"2026-11-28": {"2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z"},
		"2026-12":    {"2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
	} {
		p, err := peer.ParsePeriod(s)
		if err != nil || p.From.Format(time.RFC3339) != want[0] || p.To.Format(time.RFC3339) != want[1] || p.Name != s {
			t.Errorf("%s: %+v %v", s, p, err)
		}
	}
	for _, s := range []string{"", "yesterday", "2026-13", "2026-11-31", "2026-11-28T00:00:00Z"} {
		if _, err := peer.ParsePeriod(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
