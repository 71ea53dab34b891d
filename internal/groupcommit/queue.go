package groupcommit

import (
	"context"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// Call is one caller's change waiting for the committer.
type Call struct {
	Ctx    context.Context
	Fn     func(ledger.Tx) error
	result chan error
}

// Answer gives the call its outcome.
func (c *Call) Answer(err error) { c.result <- err }

// Answer gives every call the same outcome.
func Answer(calls []*Call, err error) {
	for _, c := range calls {
		c.Answer(err)
	}
}

// Queue is the calls of one store's committer.
type Queue struct {
	calls chan *Call
	quit  chan struct{} // closed by Stop
	done  chan struct{} // closed by Run as it returns
}

// New makes a queue; the engine starts Run in a goroutine of its own.
func New() *Queue {
	return &Queue{calls: make(chan *Call), quit: make(chan struct{}), done: make(chan struct{})}
}

// Submit queues fn and returns its outcome; closed is the engine's error
// for a store that stopped before the committer took the call.
func (q *Queue) Submit(ctx context.Context, fn func(ledger.Tx) error, closed error) error {
	c := &Call{Ctx: ctx, Fn: fn, result: make(chan error, 1)}
	select {
	case q.calls <- c:
	case <-ctx.Done():
		return ctx.Err()
	case <-q.quit:
		return closed
	}
	return <-c.result
}

// commitDelay and commitSiblings are the committer's wait for company,
// as PostgreSQL's commit_delay and commit_siblings: when the last group
// had at least commitSiblings calls, several callers are at work, and
// those not yet queued are likely on their way (a request being read or
// priced, a peer's answer coming back); Run waits up to commitDelay for
// them, so that they share this commit's sync instead of queueing for the
// next one, which would cost them a whole sync more. A caller alone, once
// its own last group was alone too, never waits.
const (
	commitDelay    = time.Millisecond
	commitSiblings = 2
)

// Run is the committer's loop: until Stop, it takes the calls waiting, at
// most max of them, waits for more as commitDelay says, and passes them to
// commit, which must answer each.
func (q *Queue) Run(max int, commit func([]*Call)) {
	defer close(q.done)
	last := 0
	for {
		var group []*Call
		select {
		case c := <-q.calls:
			group = append(group, c)
		case <-q.quit:
			return
		}
		if last >= commitSiblings {
			q.wait(&group, max)
		} else {
			q.gather(&group, max)
		}
		last = len(group)
		commit(group)
	}
}

// gather adds the calls waiting, up to max in the group.
func (q *Queue) gather(group *[]*Call, max int) {
	for len(*group) < max {
		select {
		case c := <-q.calls:
			*group = append(*group, c)
		default:
			return
		}
	}
}

// wait adds calls as they come until the group has max of them, for at
// most commitDelay, or until Stop.
func (q *Queue) wait(group *[]*Call, max int) {
	timer := time.NewTimer(commitDelay)
	defer timer.Stop()
	for len(*group) < max {
		select {
		case c := <-q.calls:
			*group = append(*group, c)
		case <-timer.C:
			return
		case <-q.quit:
			return
		}
	}
}

// Stopping is closed once Stop is called: a commit that waits (to retry)
// gives up on it.
func (q *Queue) Stopping() <-chan struct{} { return q.quit }

// Stop ends Run after the group it is running and waits for it.
func (q *Queue) Stop() {
	close(q.quit)
	<-q.done
}
