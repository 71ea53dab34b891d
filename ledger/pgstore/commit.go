package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingot-hpc/ingot/internal/groupcommit"
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
			return err
		case err != nil:
			refused, refusals = append(refused, c), append(refusals, err)
		default:
			done = append(done, c)
		}
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
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
// which serialises every writer of the bank, in this process or another.
func (s *Store) begin(ctx context.Context, conn *pgxpool.Conn) (*tx, error) {
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return nil, errGroup{fmt.Errorf("pgstore: begin a change of %s: %w", s.where, err)}
	}
	t := &tx{q: conn, ctx: ctx, writable: true}
	var seq, version int64
	var tm *time.Time
	var hash []byte
	err := conn.QueryRow(ctx, `SELECT h.seq, h.time, h.hash, (SELECT max(version) FROM schema_version)
		FROM journal_head h FOR UPDATE OF h`).Scan(&seq, &tm, &hash, &version)
	if err != nil {
		rollback(conn)
		return nil, errGroup{fmt.Errorf("pgstore: lock the journal of %s: %w", s.where, err)}
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
// the call leaves nothing, the others are unaffected. A failure of the
// savepoint itself is the group's (errGroup).
func (t *tx) run(fn func(ledger.Tx) error) (err error) {
	sql := "SAVEPOINT call"
	if t.called {
		sql = "RELEASE SAVEPOINT call; SAVEPOINT call"
	}
	if _, err := t.q.Exec(t.ctx, sql); err != nil {
		return errGroup{fmt.Errorf("pgstore: savepoint: %w", err)}
	}
	t.called = true
	head := t.head
	t.failed = nil
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
	if err == nil {
		return nil
	}
	if _, rbErr := t.q.Exec(t.ctx, "ROLLBACK TO SAVEPOINT call"); rbErr != nil {
		return errGroup{fmt.Errorf("pgstore: roll back a failed change (%v): %w", err, rbErr)}
	}
	t.head = head
	if t.failed != nil && transient(t.failed) {
		// The statement failed with the connection, not for this call:
		// the group goes again.
		return errGroup{t.failed}
	}
	return err
}
