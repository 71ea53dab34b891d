package boltstore

import (
	"fmt"
	"time"
)

// trimBudget is about how many overlay entries the committer trims per
// group (see overlay.trim).
const trimBudget = 512

// commitLoop takes whatever calls are waiting and runs them as a group,
// then hands the group to the syncer and goes on with the next group while
// the syncer writes the log.
func (s *Store) commitLoop() {
	defer close(s.toSync)
	for first := range s.calls {
		s.toSync <- s.run(gather(first, s.calls, maxGroup))
	}
}

// gather is first and whatever else waits in ch, at most max in all: a
// group takes what has come, with no batching delay.
func gather[T any](first T, ch <-chan T, max int) []T {
	out := []T{first}
	for len(out) < max {
		select {
		case v, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, v)
		default:
			return out
		}
	}
	return out
}

// run runs the calls one after another over the file and the overlay. A
// call that fails has its writes undone; the others are kept.
func (s *Store) run(calls []*call) *group {
	if f := s.failures.Load(); f != s.epoch {
		// The log could not be written: what the overlay holds beyond the
		// durable state is lost, and the groups built on it fail in the
		// syncer. Start again from the durable state.
		durable := s.published.Load()
		s.ov.restore(durable.ov, durable.group)
		s.cache.reset()
		s.epoch = f
	}
	// What was trimmed is in the file: a reader of this group's snapshot
	// needs a file at least that new.
	s.trimmed = max(s.trimmed, s.ov.trim(s.checkpointed.Load(), trimBudget))
	s.lastGroup++
	g := &group{writes: groupWrites{group: s.lastGroup}, calls: calls, epoch: s.epoch, start: time.Now()}
	// The read transaction is opened after the trim, so the file holds what
	// was trimmed, and closed before the group goes on: bbolt's writer may
	// have to wait for readers when it grows the file.
	btx, err := s.db.Begin(false)
	if err != nil {
		for _, c := range calls {
			c.err = fmt.Errorf("boltstore: read: %w", err)
		}
		return g
	}
	defer btx.Rollback()
	ses := newSession(btx, s.ov, s.cache, s.lastGroup)
	// The writes go on to the syncer; sized as the last group's per call,
	// they are not copied as they grow. The undo records are the
	// committer's own and reused.
	ses.writes = make([]write, 0, len(calls)*s.writesPerCall)
	ses.undos = s.undos[:0]
	for _, c := range calls {
		c.err = ses.runCall(c.fn, btx)
	}
	s.undos = ses.undos
	s.writesPerCall = len(ses.writes)/len(calls) + 1
	g.writes.writes = ses.writes
	s.ov.committed(g.writes)
	g.snap = &snapshot{group: s.lastGroup, trimmed: s.trimmed, ov: s.ov.copy()}
	return g
}
