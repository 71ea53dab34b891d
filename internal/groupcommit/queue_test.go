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
// for company that does not come. A machine busy enough to hold the
// second caller back longer than the wait would split the pair, so the
// pair is tried on up to five fresh queues: without the wait, none joins.
func TestCommitDelay(t *testing.T) {
	var (
		q     *Queue
		sizes chan int
		n     int
	)
	for range 5 {
		if q != nil {
			q.Stop()
		}
		q, sizes, n = pairAfterCompany()
		if n == 2 {
			break
		}
	}
	defer q.Stop()
	if n != 2 {
		t.Errorf("two calls %s apart made a group of %d five times, want them in one", commitDelay/5, n)
	}
	// A caller alone: the first may wait once (its last group had two);
	// then none does. Counted call by call, so that a busy machine
	// holding up a few calls does not decide: a committer that waited for
	// lone callers would hold up every one by commitDelay.
	const lone = 100
	slow := 0
	for range lone {
		start := time.Now()
		if err := submitNothing(q); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= commitDelay {
			slow++
		}
	}
	if slow > lone/2 {
		t.Errorf("%d of %d calls one after the other took %s or more: a lone caller waited", slow, lone, commitDelay)
	}
	for range lone {
		if n := <-sizes; n != 1 {
			t.Errorf("a lone call made a group of %d", n)
		}
	}
}

// pairAfterCompany starts a queue whose committer reports each group's
// size on sizes, gives it a group with company (8 calls queued behind a
// first held at the gate), then submits two calls commitDelay/5 apart and
// says the size of the group the first went into.
func pairAfterCompany() (*Queue, chan int, int) {
	q := New()
	gate := make(chan struct{})
	sizes := make(chan int, 1024)
	go q.Run(64, func(group []*Call) {
		<-gate
		sizes <- len(group)
		Answer(group, nil)
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = submitNothing(q) })
	}
	time.Sleep(20 * time.Millisecond) // the first taken, the others queued behind it
	close(gate)
	wg.Wait()
	for len(sizes) > 0 {
		<-sizes
	}
	// The last group had company: the committer waits for the second.
	wg.Go(func() { _ = submitNothing(q) })
	for at := time.Now(); time.Since(at) < commitDelay/5; {
		// A sleep this short may last a millisecond: spin.
	}
	wg.Go(func() { _ = submitNothing(q) })
	wg.Wait()
	n := <-sizes
	if n == 1 {
		<-sizes // the second's own group
	}
	return q, sizes, n
}

// submitNothing submits a call that changes nothing.
func submitNothing(q *Queue) error {
	return q.Submit(context.Background(), func(ledger.Tx) error { return nil }, errors.New("closed"))
}
