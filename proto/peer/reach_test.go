package peer_test

import (
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestAway: a peer whose sending got no answer is away, and not tried
// again before the retry is due; then one caller at a time is told to try
// it, while the others are still told it is away; a try given back is the
// next caller's; an answer ends it. (Retries of an hour where the test
// needs "not due yet", of a millisecond where it needs "due", so that no
// pause of the machine decides.)
func TestAway(t *testing.T) {
	r := peer.New(nil, nil)
	away := func(name string) bool {
		a, _ := r.Away(name, time.Hour)
		return a
	}
	r.SetAwayRetry(time.Hour)
	if away("central") {
		t.Fatal("a peer never tried is away")
	}
	r.Unreachable("central")
	if !away("central") {
		t.Fatal("a peer that did not answer is not away")
	}
	if away("siteb") {
		t.Fatal("another peer is away too")
	}
	r.SetAwayRetry(time.Millisecond)
	r.Unreachable("central")
	time.Sleep(20 * time.Millisecond)
	if away("central") {
		t.Fatal("no try after the retry was due")
	}
	for range 3 {
		if !away("central") {
			t.Fatal("a second caller tries the peer while the first is trying it")
		}
	}
	r.Unreachable("central")
	time.Sleep(20 * time.Millisecond)
	a, untried := r.Away("central", time.Hour)
	if a || !away("central") {
		t.Fatal("not one try after the retry was due")
	}
	untried()
	if away("central") {
		t.Fatal("a try given back is not the next caller's")
	}
	r.Reached("central")
	if away("central") {
		t.Fatal("a peer that answered is still away")
	}
	r.SetAwayRetry(time.Hour)
	r.Unreachable("central")
	if !away("central") {
		t.Fatal("a peer that did not answer again is not away")
	}
}
