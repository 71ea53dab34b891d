package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// connection, or its BEGIN), before its COMMIT was sent:
// nothing of the group was made, so it may run again.
type errGroup struct{ err error }

func (e errGroup) Error() string { return e.err.Error() }
func (e errGroup) Unwrap() error { return e.err }

// errSpoilt is the failure of a call that spoilt the group's
// transaction: a statement of it failed, or it failed after sending
// writes. The call fails, and the group runs again without it. A
// statement that failed with the rows of several calls names none (call
// -1): the group runs again carefully, each call's rows sent on their own,
// which finds the call.
type errSpoilt struct {
	call int // its place in the group, or -1
	err  error
}

func (e *errSpoilt) Error() string { return e.err.Error() }
func (e *errSpoilt) Unwrap() error { return e.err }

// commit runs a group in one transaction and answers its calls, running
// it again on a new connection while its transaction fails transiently
// before its commit (see Options.RetryFor).
func (s *Store) commit(group []*groupcommit.Call) {
	start := time.Now()
	var deadline time.Time
	careful := false
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
		err := s.attempt(group, start, careful)
		var ge errGroup
		var ce *errSpoilt
		if err == nil {
			return
		}
		if errors.As(err, &ce) && ce.call < 0 && !careful {
			careful = true
			continue
		}
		if errors.As(err, &ce) && ce.call >= 0 {
			group[ce.call].Answer(ce.err)
			group = slices.Delete(group, ce.call, ce.call+1)
			continue
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
func (s *Store) attempt(group []*groupcommit.Call, start time.Time, careful bool) error {
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
	t.careful = careful
	var done []*groupcommit.Call
	var refused []*groupcommit.Call
	var refusals []error
	for i, c := range group {
		t.index = i
		err := t.run(c.Fn)
		var ge errGroup
		var ce *errSpoilt
		switch {
		case errors.As(err, &ge), errors.As(err, &ce):
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
		if xid, err = t.finish(); err != nil {
			rollback(conn)
			s.forgetCache()
			return err
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
	t := &tx{q: conn, ctx: ctx, writable: true, cache: s.cache, group: recordcache.Writes{}, groupCounters: map[string]uint64{}}
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

// run runs one call's function in the group's transaction. A call that
// fails before any write of it reached PostgreSQL just fails; its writes
// waiting are dropped. One that fails after, or whose statement failed
// (PostgreSQL then aborts the transaction), spoils the group (errSpoilt),
// which runs again without it: as boltstore's, so that no call pays for a
// savepoint. A failure of the connection is the group's (errGroup).
func (t *tx) run(fn func(ledger.Tx) error) (err error) {
	head := t.head
	t.call, t.rows, t.counters, t.wrote, t.failed = recordcache.Writes{}, pending{}, nil, false, nil
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("pgstore: a change panicked: %v", r)
			}
		}()
		err = fn(t)
	}()
	if err == nil && t.careful && !t.rows.empty() {
		err = t.flush()
	}
	if err == nil {
		err = t.failed
	}
	switch {
	case err == nil && t.spoilt == nil:
		t.groupRows.merge(&t.rows)
		t.group.Merge(t.call)
		for name, id := range t.counters {
			t.groupCounters[name] = max(t.groupCounters[name], id)
		}
		return nil
	case t.failed != nil && transient(t.failed):
		// The statement failed with the connection, not for this call:
		// the group goes again.
		return errGroup{t.failed}
	case t.spoilt != nil:
		return t.spoilt
	case t.wrote:
		return &errSpoilt{call: t.index, err: err}
	}
	t.rows, t.head = pending{}, head
	return err
}

// flush sends the writes waiting, with no read after them.
func (t *tx) flush() error {
	br, err := t.sendBatch(t.sending(), "")
	if err != nil {
		return err
	}
	return br.Close()
}

// forgetCache empties the record cache after a group that did not commit:
// what it read may have been its own writes.
func (s *Store) forgetCache() {
	s.cache.Clear()
	s.cachedAfter = ""
}

// finish sends what the group's calls left waiting, keeps the counters
// at the ids given and stored, and moves the journal's head row to the
// newest entry, so that the row's xmin is the group's transaction (see
// begin), which it returns.
func (t *tx) finish() (xid string, err error) {
	statements := t.sending()
	if len(t.groupCounters) > 0 {
		var names []string
		var ids []int64
		for name, id := range t.groupCounters {
			names, ids = append(names, name), append(ids, bigint(id))
		}
		statements = append(statements, statement{what: "keep the counters", call: -1,
			sql: `UPDATE counters c SET value = greatest(c.value, u.value) FROM unnest($1::text[], $2::bigint[]) u (name, value)
				WHERE c.name = u.name`, args: []any{names, ids}})
	}
	var tm *time.Time
	if !t.head.Time.IsZero() {
		tm = &t.head.Time
	}
	br, err := t.sendBatch(statements, `UPDATE journal_head SET seq = $1, time = $2, hash = $3 RETURNING xmin::text`,
		bigint(t.head.Seq), tm, t.head.Hash[:])
	if err != nil {
		if s := t.spoilt; s != nil && !transient(err) {
			return "", s
		}
		return "", errGroup{err}
	}
	err = br.QueryRow().Scan(&xid)
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return "", errGroup{fmt.Errorf("pgstore: move the journal's head: %w", err)}
	}
	return xid, nil
}
