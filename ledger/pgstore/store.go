package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingot-hpc/ingot/internal/groupcommit"
	"github.com/ingot-hpc/ingot/internal/recordcache"
	"github.com/ingot-hpc/ingot/ledger"
)

// maxGroup bounds the calls one transaction runs: the others wait for
// the group's commit, and a call that spoils the group runs it again.
const maxGroup = 64

// Options tune Open.
type Options struct {
	// ReadOnly opens the store for reading: Update is refused.
	ReadOnly bool
	// NoUpgrade refuses a bank of an earlier schema (ledger.ErrUpgradeNeeded)
	// rather than upgrade it, for a command that only reads.
	NoUpgrade bool
	// Create makes the schema in an empty database; otherwise an empty
	// database is refused (ledger.ErrNotInitialized).
	Create bool
	// ConnectTimeout bounds Open's first connection (default 10s).
	ConnectTimeout time.Duration
	// RetryFor is how long a group of calls whose connection failed
	// before its commit is tried again, on a new connection (default
	// 30s): what a failover takes. Such a group committed nothing, so
	// running it again applies it once.
	RetryFor time.Duration
	// OnCommit, if set, is told of each commit: how many calls it made
	// durable, and the time from the start of their group to the commit's
	// end. It runs on the committer: return at once.
	OnCommit func(calls int, d time.Duration)
	// OnUpgrade, if set, is told that Open upgraded a bank of an earlier
	// schema (from) to this one (to).
	OnUpgrade func(from, to uint64)
}

// Store is a ledger.Store on a PostgreSQL database.
type Store struct {
	// pool serves the reads; writer, of one connection, the committer, so
	// that a crowd of reads (quotes at job submission) never keeps
	// changes waiting for a connection.
	pool, writer *pgxpool.Pool
	where        string // the database, for messages: user@host:port/name
	readOnly     bool
	opts         Options
	latest       uint64 // the schema this ingot writes

	queue *groupcommit.Queue // nil when read-only
	// cache is the committer's record cache, exact after the transaction
	// cachedAfter (tx.go, commit.go's begin); only the committer uses them.
	cache       *recordcache.Cache
	cachedAfter string

	mu     sync.Mutex
	closed bool
}

// Open opens the bank in the database that url names (a postgres:// URL or
// a libpq key=value string; see Options).
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	return open(ctx, url, opts, bankMigrations)
}

func open(ctx context.Context, url string, opts Options, ms []migration) (*Store, error) {
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.RetryFor == 0 {
		opts.RetryFor = 30 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: the connection string: %v", ErrConnect, err)
	}
	where := describe(cfg.ConnConfig.Config)
	cfg.ConnConfig.RuntimeParams["application_name"] = "ingot"
	// A writer stopped or cut off inside its transaction would hold the
	// journal's head, and so every other server, until PostgreSQL drops
	// its session.
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "60s"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrConnect, where, err)
	}
	s := &Store{pool: pool, where: where, readOnly: opts.ReadOnly, opts: opts, latest: uint64(len(ms))}
	if err := s.prepare(ctx, ms); err != nil {
		pool.Close()
		return nil, err
	}
	if !s.readOnly {
		writerCfg := cfg.Copy()
		writerCfg.MaxConns, writerCfg.MinConns = 1, 0
		if s.writer, err = pgxpool.NewWithConfig(ctx, writerCfg); err != nil {
			pool.Close()
			return nil, fmt.Errorf("%w %s: %v", ErrConnect, where, err)
		}
		s.queue, s.cache = groupcommit.New(), recordcache.New()
		go s.commitLoop()
	}
	return s, nil
}

// String names the bank's database, without its password: user@host:port/name.
func (s *Store) String() string { return s.where }

// describe names a database without its password.
func describe(c pgconn.Config) string {
	hosts := []string{fmt.Sprintf("%s:%d", c.Host, c.Port)}
	for _, f := range c.Fallbacks {
		if h := fmt.Sprintf("%s:%d", f.Host, f.Port); !strings.Contains(strings.Join(hosts, ","), h) {
			hosts = append(hosts, h)
		}
	}
	return fmt.Sprintf("%s@%s/%s", c.User, strings.Join(hosts, ","), c.Database)
}

// prepare connects, checks what the database holds, and makes or
// upgrades the schema if it may; a database it refuses is not written to.
func (s *Store) prepare(ctx context.Context, ms []migration) error {
	connectCtx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(connectCtx)
	if err != nil {
		return connectError(s.where, err)
	}
	defer conn.Release()
	st, err := inspect(connectCtx, conn)
	if err != nil {
		return fmt.Errorf("pgstore: open %s: %w", s.where, err)
	}
	if err := checkState(st, s.latest, s.where, s.opts.Create, s.readOnly || s.opts.NoUpgrade); err != nil {
		return err
	}
	if st.version == s.latest {
		return nil
	}
	// An upgrade takes what it takes: the connect timeout is not for it.
	from, err := migrate(ctx, conn.Conn(), ms, s.where)
	if err != nil {
		return fmt.Errorf("pgstore: open %s: %w", s.where, err)
	}
	if from > 0 && from < s.latest && s.opts.OnUpgrade != nil {
		s.opts.OnUpgrade(from, s.latest)
	}
	return nil
}

// connectError says why a connection failed: PostgreSQL's refusal, or the
// network's, rather than pgx's list of every attempt (TLS, then without).
func connectError(where string, err error) error {
	if pgErr, ok := errAs[*pgconn.PgError](err); ok {
		err = pgErr
	} else if netErr, ok := errAs[*net.OpError](err); ok {
		err = netErr
	}
	return fmt.Errorf("%w %s: %v", ErrConnect, where, err)
}

// View runs fn in a read-only, repeatable-read transaction: one snapshot
// of the bank.
func (s *Store) View(ctx context.Context, fn func(ledger.Tx) error) error {
	if s.isClosed() {
		return ErrClosed
	}
	var ptx pgx.Tx
	err := s.retry(ctx, func() (err error) {
		ptx, err = s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		return err
	})
	if err != nil {
		return unavailable(fmt.Errorf("pgstore: begin a read of %s: %w", s.where, err))
	}
	defer ptx.Rollback(context.Background())
	t := &tx{q: ptx, ctx: ctx}
	err = fn(t)
	if err == nil {
		err = t.failed
	}
	if t.failed != nil && transient(t.failed) {
		return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
	}
	return err
}

// unavailable marks err as ledger.ErrUnavailable if it may pass by itself.
func unavailable(err error) error {
	if transient(err) {
		return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
	}
	return err
}

// retry runs op until it succeeds, fails for good, or RetryFor has passed
// since its first failure; op must be safe to run again after a failure.
func (s *Store) retry(ctx context.Context, op func() error) error {
	var deadline time.Time
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := op()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(s.opts.RetryFor)
		} else if time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
}

// transient says whether err may pass by itself: a connection lost or
// refused, a server shutting down or starting, a standby not yet
// promoted, a transaction chosen to fail to end a deadlock.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if pgErr, ok := errAs[*pgconn.PgError](err); ok {
		switch pgErr.Code {
		case "40001", "40P01", "57P01", "57P02", "57P03", "25006", "53300":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	if _, ok := errAs[*pgconn.ConnectError](err); ok {
		return true
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && (pgconn.SafeToRetry(err) || isConnError(err))
}

// isConnError says whether err came from the network under the
// connection rather than from PostgreSQL.
func isConnError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") || strings.Contains(msg, "connection refused")
}

// Update runs fn in the committer's next group and returns once the group
// has committed (see the package documentation).
func (s *Store) Update(ctx context.Context, fn func(ledger.Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, s.where)
	}
	if s.isClosed() {
		return ErrClosed
	}
	return s.queue.Submit(ctx, fn, ErrClosed)
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops the committer, after the group it is running, and closes the
// connections. Calls waiting for it get ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.queue != nil {
		s.queue.Stop()
	}
	if s.writer != nil {
		s.writer.Close()
	}
	s.pool.Close()
	return nil
}
