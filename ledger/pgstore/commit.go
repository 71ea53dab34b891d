package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingot-hpc/ingot/internal/groupcommit"
	"github.com/ingot-hpc/ingot/internal/recordcache"
	"github.com/ingot-hpc/ingot/ledger"
)

// groupTimeout bounds one attempt at a group, from BEGIN to COMMIT: a
// group is at most maxGroup calls, each a few statements.
const groupTimeout = time.Minute

// commitLoop is the committer.
func (s *Store) commitLoop() { s.queue.Run(maxGroup, s.commit) }

// errGroup marks a failure of a group's transaction itself (its
// connection, its BEGIN or a savepoint), before its COMMIT was sent:
// nothing of the group was made, so it may run again.
type errGroup struct{ err error }

func (e errGroup) Error() string { return e.err.Error() }
func (e errGroup) Unwrap() error { return e.err }

// commit runs a group in one transaction and answers its calls, running
// it again on a new connection while its transaction fails transiently
// before its commit (see Options.RetryFor).
func (s *Store) commit(group []*groupcommit.Call) {
	start := time.Now()
	var deadline time.Time
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		live := group[:0:0]
		for _, c := range group {
			if err := c.Ctx.Err(); err != nil {
				c.Answer(err) // not run, or run and rolled back
			} else {
				live = append(live, c)
			}
		}
		if group = live; len(group) == 0 {
			return
		}
		err := s.attempt(group, start)
		var ge errGroup
		if err == nil {
			return
		}
		if !errors.As(err, &ge) || !transient(ge.err) {
			groupcommit.Answer(group, err)
			return
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(s.opts.RetryFor)
		} else if time.Now().After(deadline) {
			groupcommit.Answer(group, fmt.Errorf("%w: pgstore: %s: gave up after %s: %w", ledger.ErrUnavailable, s.where, s.opts.RetryFor, ge.err))
			return
		}
		select {
		case <-time.After(wait):
		case <-s.queue.Stopping():
			groupcommit.Answer(group, ErrClosed)
			return
		}
	}
}

// attempt runs the group once. It answers the calls itself unless the
// group's transaction failed before its commit (errGroup) or could not
// begin: then it returns the error, and has answered none.
func (s *Store) attempt(group []*groupcommit.Call, start time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	conn, err := s.writer.Acquire(ctx)
	if err != nil {
		return errGroup{fmt.Errorf("pgstore: connect to %s: %w", s.where, err)}
	}
	defer conn.Release()
	t, err := s.begin(ctx, conn)
	if err != nil {
		s.forgetCache()
		return err
	}
	var done []*groupcommit.Call
	var refused []*groupcommit.Call
	var refusals []error
	for _, c := range group {
		err := t.run(c.Fn)
		var ge errGroup
		switch {
		case errors.As(err, &ge):
			rollback(conn)
			s.forgetCache()
			return err
		case err != nil:
			refused, refusals = append(refused, c), append(refusals, err)
		default:
			done = append(done, c)
		}
	}
	var xid string
	if len(done) > 0 {
		if xid, err = touch(ctx, conn); err != nil {
			rollback(conn)
			s.forgetCache()
			return errGroup{fmt.Errorf("pgstore: mark the journal of %s: %w", s.where, err)}
		}
	}
	_, err = conn.Exec(ctx, "COMMIT")
	if err == nil && len(done) > 0 {
		s.cache.Commit(t.group)
		s.cachedAfter = xid
	} else if err != nil {
		s.forgetCache()
	}
	if err != nil {
		if conn.Conn().IsClosed() {
			err = fmt.Errorf("%w: %w (%s): %v", ledger.ErrUnavailable, ErrCommitUnknown, s.where, err)
		} else {
			// PostgreSQL answered: the transaction was rolled back.
			rollback(conn)
			err = fmt.Errorf("pgstore: commit to %s: %w", s.where, err)
		}
		groupcommit.Answer(done, err)
	} else {
		if s.opts.OnCommit != nil && len(done) > 0 {
			// Before the answers: whoever is answered sees its commit
			// counted.
			s.opts.OnCommit(len(done), time.Since(start))
		}
		groupcommit.Answer(done, nil)
	}
	for i, c := range refused {
		c.Answer(refusals[i])
	}
	return nil
}

// begin starts the group's transaction and takes the journal's head,
// which serialises every writer of the bank, in this process or another,
// in one round trip.
//
// The head row's xmin, the transaction that last wrote it, names the last
// group to have changed the bank, whichever server ran it (see touch): if
// that is not this store's last, another has written the bank and the
// record cache may be stale, so it starts again empty.
func (s *Store) begin(ctx context.Context, conn *pgxpool.Conn) (*tx, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(`SELECT h.seq, h.time, h.hash, h.xmin::text, (SELECT max(version) FROM schema_version)
		FROM journal_head h FOR UPDATE OF h`)
	t := &tx{q: conn, ctx: ctx, writable: true, cache: s.cache, group: recordcache.Writes{}}
	var seq, version int64
	var tm *time.Time
	var hash []byte
	var last string
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&seq, &tm, &hash, &last, &version)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		rollback(conn)
		return nil, errGroup{fmt.Errorf("pgstore: begin a change of %s and lock its journal: %w", s.where, err)}
	}
	if last != s.cachedAfter {
		s.cache.Clear()
		s.cachedAfter = last
	}
	if t.head, err = makeHead(seq, tm, hash); err != nil {
		rollback(conn)
		return nil, err
	}
	if uint64(version) != s.latest {
		rollback(conn)
		return nil, fmt.Errorf("%w: %s was upgraded to schema %d by another ingot while this one (schema %d) served it: run the newer ingot", ErrNewerSchema, s.where, version, s.latest)
	}
	return t, nil
}

// rollback ends a transaction that is being given up; if the connection
// is broken the pool drops it on release, and PostgreSQL the transaction.
func rollback(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "ROLLBACK")
}

// run runs one call's function in a savepoint of the group's transaction,
// and rolls back to it if the function fails or a statement of it failed:
// the call leaves nothing, the others are unaffected. The savepoint is
// opened with the call's first statement and released with its last (tx's
// send), and a call that sends none needs none. A failure of the savepoint
// itself is the group's (errGroup).
func (t *tx) run(fn func(ledger.Tx) error) (err error) {
	head := t.head
	t.call, t.waiting, t.saved, t.failed = recordcache.Writes{}, nil, false, nil
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("pgstore: a change panicked: %v", r)
			}
		}()
		err = fn(t)
	}()
	if err == nil {
		err = t.failed
	}
	if err == nil && (t.saved || len(t.waiting) > 0) {
		t.waiting = append(t.waiting, statement{what: "end a change", sql: "RELEASE SAVEPOINT call"})
		err = t.flush()
	}
	if err == nil {
		t.group.Merge(t.call)
		return nil
	}
	t.waiting, t.head = nil, head
	if t.saved {
		if _, rbErr := t.q.Exec(t.ctx, "ROLLBACK TO SAVEPOINT call; RELEASE SAVEPOINT call"); rbErr != nil {
			return errGroup{fmt.Errorf("pgstore: roll back a failed change (%v): %w", err, rbErr)}
		}
	}
	if t.failed != nil && transient(t.failed) {
		// The statement failed with the connection, not for this call:
		// the group goes again.
		return errGroup{t.failed}
	}
	return err
}

// forgetCache empties the record cache after a group that did not commit:
// what it read may have been its own writes.
func (s *Store) forgetCache() {
	s.cache.Clear()
	s.cachedAfter = ""
}

// touch writes the journal's head row again, outside the calls'
// savepoints, so that its xmin is the group's transaction, and returns it.
func touch(ctx context.Context, conn *pgxpool.Conn) (xid string, err error) {
	err = conn.QueryRow(ctx, `UPDATE journal_head SET seq = seq RETURNING xmin::text`).Scan(&xid)
	return xid, err
}
