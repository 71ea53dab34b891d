package peer_test

import (
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestAway: a peer whose sending got no answer is away, and not tried
// again before the retry is due; then one caller at a time is told to try
// it, while the others are still told it is away; an answer ends it.
// (Retries of an hour where the test needs "not due yet", of a
// millisecond where it needs "due", so that no pause of the machine
// decides.)
func TestAway(t *testing.T) {
	r := peer.New(nil, nil)
	r.SetAwayRetry(time.Hour)
	if r.Away("central", time.Hour) {
		t.Fatal("a peer never tried is away")
	}
	r.Unreachable("central")
	if !r.Away("central", time.Hour) {
		t.Fatal("a peer that did not answer is not away")
	}
	if r.Away("siteb", time.Hour) {
		t.Fatal("another peer is away too")
	}
	r.SetAwayRetry(time.Millisecond)
	r.Unreachable("central")
	time.Sleep(20 * time.Millisecond)
	if r.Away("central", time.Hour) {
		t.Fatal("no try after the retry was due")
	}
	for range 3 {
		if !r.Away("central", time.Hour) {
			t.Fatal("a second caller tries the peer while the first is trying it")
		}
	}
	r.Reached("central")
	if r.Away("central", time.Hour) {
		t.Fatal("a peer that answered is still away")
	}
	r.SetAwayRetry(time.Hour)
	r.Unreachable("central")
	if !r.Away("central", time.Hour) {
		t.Fatal("a peer that did not answer again is not away")
	}
}
