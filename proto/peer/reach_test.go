package peer_test

import (
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestAway: a peer whose sending got no answer is away, and not tried
// again before the retry is due; then one caller at a time is told to try
// it, while the others are still told it is away; an answer ends it.
func TestAway(t *testing.T) {
	r := peer.New(nil, nil)
	const retry = 20 * time.Millisecond
	r.SetAwayRetry(retry)
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
	time.Sleep(2 * retry)
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
	r.Unreachable("central")
	if !r.Away("central", time.Hour) {
		t.Fatal("a peer that did not answer again is not away")
	}
}
