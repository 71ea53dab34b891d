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
		calls := []*call{first}
	gather:
		for len(calls) < maxGroup {
			select {
			case c, ok := <-s.calls:
				if !ok {
					break gather
				}
				calls = append(calls, c)
			default:
				break gather
			}
		}
		s.toSync <- s.run(calls)
	}
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
	for _, c := range calls {
		c.err = ses.runCall(c.fn, btx)
	}
	g.writes.writes = ses.writes
	s.ov.committed(g.writes)
	g.snap = &snapshot{group: s.lastGroup, trimmed: s.trimmed, ov: s.ov.copy()}
	return g
}
