package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestGroups: calls made at once reach the committer in groups of at most
// the bound, each answered with what commit says; a call submitted after
// Stop gets the closed error, and one whose context is done before the
// committer takes it gets the context's error.
func TestGroups(t *testing.T) {
	q := New()
	release := make(chan struct{})
	var sizes []int
	var mu sync.Mutex
	go q.Run(3, func(group []*Call) {
		<-release
		mu.Lock()
		sizes = append(sizes, len(group))
		mu.Unlock()
		for _, c := range group {
			c.Answer(c.Fn(nil))
		}
	})
	errOdd := errors.New("odd")
	var wg sync.WaitGroup
	results := make([]error, 7)
	for i := range 7 {
		wg.Go(func() {
			results[i] = q.Submit(context.Background(), func(ledger.Tx) error {
				if i%2 == 1 {
					return errOdd
				}
				return nil
			}, errors.New("closed"))
		})
	}
	close(release)
	wg.Wait()
	for i, err := range results {
		if (i%2 == 1) != errors.Is(err, errOdd) {
			t.Errorf("call %d: %v", i, err)
		}
	}
	total := 0
	for _, n := range sizes {
		if n < 1 || n > 3 {
			t.Errorf("a group of %d calls, bound 3", n)
		}
		total += n
	}
	if total != 7 {
		t.Errorf("%d calls reached the committer, want 7", total)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q2 := New() // no committer: the call cannot be taken
	if err := q2.Submit(ctx, func(ledger.Tx) error { return nil }, errors.New("closed")); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v", err)
	}
	q.Stop()
	closed := errors.New("closed")
	if err := q.Submit(context.Background(), func(ledger.Tx) error { return nil }, closed); err != closed {
		t.Errorf("a call after Stop: %v", err)
	}
}
