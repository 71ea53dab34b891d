package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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

// TestCommitDelay: after a group with company, a call that comes within
// commitDelay of the committer taking the first joins its group, so both
// share one commit; a caller alone is committed at once, never waiting
// for company that does not come.
func TestCommitDelay(t *testing.T) {
	q := New()
	defer q.Stop()
	gate := make(chan struct{})
	sizes := make(chan int, 1024)
	go q.Run(64, func(group []*Call) {
		<-gate
		sizes <- len(group)
		Answer(group, nil)
	})
	submit := func() error {
		return q.Submit(context.Background(), func(ledger.Tx) error { return nil }, errors.New("closed"))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = submit() })
	}
	time.Sleep(20 * time.Millisecond) // the first taken, the others queued behind it
	close(gate)
	wg.Wait()
	for len(sizes) > 0 {
		<-sizes
	}
	// The last group had company: the committer waits for the second.
	wg.Go(func() { _ = submit() })
	for at := time.Now(); time.Since(at) < commitDelay/5; {
		// A sleep this short may last a millisecond: spin.
	}
	wg.Go(func() { _ = submit() })
	wg.Wait()
	if n := <-sizes; n != 2 {
		t.Errorf("two calls %s apart made a group of %d, want them in one", commitDelay/5, n)
	}
	// A caller alone: the first may wait once (its last group had two);
	// then none does.
	const lone = 100
	start := time.Now()
	for range lone {
		if err := submit(); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took >= lone*commitDelay/2 {
		t.Errorf("%d calls one after the other took %s: a lone caller waited", lone, took)
	}
	for range lone {
		if n := <-sizes; n != 1 {
			t.Errorf("a lone call made a group of %d", n)
		}
	}
}
