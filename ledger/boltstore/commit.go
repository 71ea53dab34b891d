package boltstore

import (
	"fmt"
	"time"
)

// trimBacklog is how many groups the overlay may hold before each group
// trims as it starts; below it, the committer trims only while no call
// waits. Trimming was 8% of its time, and it is idle a sixth of the time
// under load.
const trimBacklog = 256

// commitLoop takes whatever calls are waiting and runs them as a group,
// then hands the group to the syncer and goes on with the next group while
// the syncer writes the log.
func (s *Store) commitLoop() {
	defer close(s.toRecord)
	for {
		var first *call
		var open bool
		select {
		case first, open = <-s.calls:
		default:
			if s.trim() {
				continue // and look for calls again
			}
			first, open = <-s.calls
		}
		if !open {
			return
		}
		s.toRecord <- s.run(gather(first, s.calls, groupLimit(s.waiting.Load())))
	}
}

// trim drops from the overlay the entries the file holds, and tells
// whether it found any.
func (s *Store) trim() bool {
	applied := s.checkpointed.Load()
	if !s.ov.canTrim(applied) {
		return false
	}
	// What was trimmed is in the file: a reader of a later group's
	// snapshot needs a file at least that new.
	s.trimmed = max(s.trimmed, s.ov.trim(applied))
	return true
}

// groupLimit is how many calls a group takes when waiting calls are in
// the store (queued, running, or being made durable): half of them, so
// that two groups are on their way at once and the committer runs one
// while the syncer makes the other durable. Without the limit the calls
// went in convoys: the syncer answered most of them at once, they came
// back together as one big group, and while the committer ran it the
// syncer had nothing to do, and the other way round.
func groupLimit(waiting int64) int {
	return int(min(max(waiting/2, 1), maxGroup))
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
		durable := s.durable.Load()
		s.rollBack(durable)
		s.cache.reset()
		s.epoch = f
		// The overlay is the durable state again: readers may have it at
		// once, rather than wait for a group that may fail as well.
		s.published.Store(&snapshot{group: durable, trimmed: s.trimmed, ov: s.ov.copy()})
	}
	s.forgetDurable()
	if s.ov.backlog() > trimBacklog {
		s.trim()
	}
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
	ses := newSession(btx, s.ov, s.cache, &s.filters, s.lastGroup)
	// The writes go on to the syncer; sized as the last group's per call,
	// they are not copied as they grow, and trimmed groups' lists are used
	// again. The undo records stay with the committer until the group is
	// durable, and their buffers are reused.
	ses.writes = s.ov.spareWrites(len(calls) * s.writesPerCall)
	ses.undos = s.spareUndos()
	wantSnapshot := false
	for _, c := range calls {
		c.err = ses.runCall(c.fn, btx)
		wantSnapshot = wantSnapshot || c.snapshot
	}
	s.unsynced = append(s.unsynced, groupUndos{group: s.lastGroup, undos: ses.undos})
	s.writesPerCall = len(ses.writes)/len(calls) + 1
	g.writes.writes = ses.writes
	s.ov.committed(g.writes)
	if wantSnapshot {
		g.snap = &snapshot{group: s.lastGroup, trimmed: s.trimmed, ov: s.ov.copy()}
	}
	return g
}

// groupUndos are how to undo a group the committer ran, kept until the
// group is durable.
type groupUndos struct {
	group uint64
	undos []undo
}

// forgetDurable drops the undo records of the groups now durable, keeping
// their buffers for the next groups.
func (s *Store) forgetDurable() {
	durable := s.durable.Load()
	n := 0
	for _, g := range s.unsynced {
		if g.group > durable {
			break
		}
		s.undoBuffers = append(s.undoBuffers, g.undos[:0])
		n++
	}
	s.unsynced = append(s.unsynced[:0], s.unsynced[n:]...)
}

// spareUndos is an undo buffer a durable group left, or a new one.
func (s *Store) spareUndos() []undo {
	if n := len(s.undoBuffers); n > 0 {
		u := s.undoBuffers[n-1]
		s.undoBuffers = s.undoBuffers[:n-1]
		return u
	}
	return nil
}

// rollBack undoes the groups after durable, newest first: their log write
// failed. Readers never saw them (only durable groups are published), so
// the overlay is again what it was after the durable group; entries
// trimmed meanwhile were in the file, which a group's undo cannot bring
// back wrongly: an undo restores the value the key had just before the
// group, and the file holds that value or the overlay still does.
func (s *Store) rollBack(durable uint64) {
	for i := len(s.unsynced) - 1; i >= 0 && s.unsynced[i].group > durable; i-- {
		revert(s.ov, s.cache, s.unsynced[i].undos)
	}
	s.unsynced = s.unsynced[:0]
	s.ov.forgetAfter(durable)
}
