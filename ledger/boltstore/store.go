package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/groupcommit"
	"github.com/ingot-hpc/ingot/internal/recordcache"
	"github.com/ingot-hpc/ingot/ledger"
)

// schemaVersion is the layout of the buckets (doc.go); Open refuses a newer
// one and upgrades oldestUpgradable and later (upgrade.go). Schema 1, the
// first ingots', hashed its journal entries in a form no later ingot reads.
const (
	schemaVersion    = 18
	oldestUpgradable = 2
)

// SchemaVersion is the schema of the files this ingot writes, for `ingot
// version`.
const SchemaVersion = schemaVersion

// logIngots are the ingot commits, first and last, that wrote each schema
// whose engine kept a write-ahead log beside the file: a log left by a
// crash is folded into the file only by the ingot that wrote it.
var logIngots = map[uint64][2]string{6: {"2529ba2", "5b265d9"}, 7: {"80de303", "9416433"}}

// maxGroup bounds the calls one transaction runs, so that one commit's
// pages stay a modest write.
const maxGroup = 1024

// initialMmapSize is bbolt's first memory map: a new map, as the file
// grows, waits for every reader to finish; this spares a busy bank those
// stalls until its file is this big.
const initialMmapSize = 1 << 30

var (
	// ErrClosed is returned by calls on a closed store.
	ErrClosed = errors.New("boltstore: store is closed")
	// ErrLocked is returned when another process holds the database file.
	ErrLocked = errors.New("boltstore: database is in use by another process")
	// ErrReadOnly is returned by Update on a store opened read-only.
	ErrReadOnly = errors.New("boltstore: store is opened read-only")
	// ErrLogLeft is returned by Open for a file whose write-ahead log,
	// kept by an earlier version of ingot, was left by a crash.
	ErrLogLeft = errors.New("boltstore: the bank was left with a write-ahead log by an earlier ingot")
	// ErrNewerSchema is returned by Open for a bank of a schema newer
	// than this ingot's.
	ErrNewerSchema = errors.New("boltstore: the bank was made by a newer ingot")
	// ErrOldSchema is returned by Open for a bank of a schema no ingot
	// upgrades.
	ErrOldSchema = errors.New("boltstore: no ingot upgrades the bank's schema")
)

// Options tune Open.
type Options struct {
	// ReadOnly opens the file with a shared lock, beside other readers. A
	// file this process may not write is opened read-only anyway.
	ReadOnly bool
	// NoUpgrade refuses a bank of an earlier schema (ledger.ErrUpgradeNeeded)
	// rather than upgrade it, for a command that only reads: reading a bank
	// never rewrites it.
	NoUpgrade bool
	// Create makes a new bank file if there is none (or it is empty);
	// otherwise a missing or empty file is refused.
	Create bool
	// LockTimeout is how long to wait for another process to release the
	// file (default 2s).
	LockTimeout time.Duration
	// OnCommit, if set, is told of each commit (for the server's metrics):
	// how many calls it made durable, and the time from the start of their
	// group to the commit's end. It runs on the committer: return at once.
	OnCommit func(calls int, d time.Duration)
	// OnUpgrade, if set, is told that Open upgraded a file of an earlier
	// schema (from) to this one (to), after copying the file as it was to
	// backup beside it.
	OnUpgrade func(from, to uint64, backup string)
	// OnUpgradeProgress, if set, is told how far an upgrade has gone: the
	// bytes of the copy of the file as it was, then the journal entries it
	// indexes (for schemas before 9), of each step's total.
	OnUpgradeProgress func(step string, done, total int64)
}

// Store is a ledger.Store on a bbolt file.
type Store struct {
	path     string
	db       *bolt.DB
	readOnly bool
	// unwritable: opened read-only because this process may not write
	// the file, which Update's refusal says.
	unwritable bool
	onCommit   func(int, time.Duration)

	queue *groupcommit.Queue // nil when read-only

	cache *recordcache.Cache // the committer's

	mu      sync.Mutex
	stopped error // set by a failed commit: every later Update gets it
	closed  bool
}

// Open opens the bank file at path (see Options).
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 2 * time.Second
	}
	fresh, err := checkFile(path, opts.Create)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	readOnly, unwritable := opts.ReadOnly, false
	if !readOnly && !fresh && !writable(path) {
		readOnly, unwritable = true, true
	}
	if !fresh {
		// Read-only first: a file that is not a bank must not change.
		version, err := probe(path, opts.LockTimeout)
		if err != nil {
			return nil, err
		}
		if err := checkVersion(path, version, readOnly || opts.NoUpgrade); err != nil {
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	db, err := openBolt(path, readOnly, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, db: db, readOnly: readOnly, unwritable: unwritable, onCommit: opts.OnCommit, cache: recordcache.New()}
	if !readOnly {
		err = s.prepare(fresh, opts.OnUpgrade, opts.OnUpgradeProgress)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if !readOnly {
		s.queue = groupcommit.New()
		go s.commitLoop()
	}
	return s, nil
}

// openBolt opens the bbolt file at path. The store keeps bbolt's free list
// in the file (bbolt's default), so that an open need not read every page
// to rebuild it; but a writer opens the file without (NoFreelistSync),
// since bbolt would otherwise write the list at once to a file that has
// none (the engine of schemas 6 and 7 kept none), before Open has copied
// a file it upgrades. prepare turns it on before the first commit.
func openBolt(path string, readOnly bool, timeout time.Duration) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: readOnly,
		FreelistType: bolt.FreelistMapType, NoFreelistSync: !readOnly, InitialMmapSize: initialMmapSize})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (waited %s for its lock)", ErrLocked, path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return db, nil
}

// writable reports whether this process may write the file.
func writable(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return !(errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS))
	}
	f.Close()
	return true
}

// probe reads the schema version of the bank at path, opening it
// read-only, and checks that a file of this schema has every bucket.
func probe(path string, timeout time.Duration) (uint64, error) {
	db, err := openBolt(path, true, timeout)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	s := &Store{path: path, db: db}
	var version uint64
	err = s.view(func(btx *bolt.Tx) error {
		var v []byte
		if meta := btx.Bucket(bucketMeta); meta != nil {
			v = meta.Get(keySchema)
		}
		if len(v) != 8 {
			return fmt.Errorf("%w: %s is a bbolt database but not an ingot bank (it has no schema version)", ledger.ErrNotInitialized, path)
		}
		version = decodeUint(v)
		if version == schemaVersion {
			for _, name := range bucketNames {
				if btx.Bucket(name) == nil {
					return fmt.Errorf("%w: %s: bucket %s is missing", ledger.ErrCorrupt, path, name)
				}
			}
		}
		return nil
	})
	return version, err
}

// checkVersion refuses a schema this ingot does not open as asked, saying
// what to do; noUpgrade refuses an earlier one.
func checkVersion(path string, version uint64, noUpgrade bool) error {
	switch {
	case version > schemaVersion:
		return fmt.Errorf("%w: %s has schema %d, and this ingot reads schemas up to %d: upgrade ingot", ErrNewerSchema, path, version, schemaVersion)
	case version < oldestUpgradable:
		return fmt.Errorf("%w: %s has schema %d, that of the first ingots (commits 5a34f3a to 7640d43), whose journal no later ingot reads. "+
			"Keep the file, read its accounts with one of those ingots (in a clone of ingot's repository: "+
			"git worktree add /tmp/ingot-schema1 7640d43 && go -C /tmp/ingot-schema1 build ./cmd/ingot && /tmp/ingot-schema1/ingot --db %s balance --allocations), "+
			"and make them again in a new bank (ingot init)", ErrOldSchema, path, version, absolute(path))
	}
	if ingots, ok := logIngots[version]; ok {
		if left, _ := filepath.Glob(path + "-wal.*"); len(left) > 0 {
			return fmt.Errorf("%w: %v beside %s (schema %d) hold changes the file may not have yet. "+
				"Open and close the bank once with the ingot that made it (schema %[4]d: commits %[5]s to %[6]s) to fold them into the file; "+
				"to build the last of those in a clone of ingot's repository and run it: "+
				"git worktree add /tmp/ingot-schema%[4]d %[6]s && go -C /tmp/ingot-schema%[4]d build ./cmd/ingot && /tmp/ingot-schema%[4]d/ingot --db %[7]s audit. "+
				"Then open the bank with this ingot, which upgrades it",
				ErrLogLeft, left, path, version, ingots[0], ingots[1], absolute(path))
		}
	}
	// After the log's check: what it says to do comes first.
	if version < schemaVersion && noUpgrade {
		return fmt.Errorf("%w: %s has schema %d and this ingot reads schema %d. A command that only reads never rewrites a bank: "+
			"upgrade a copy and read that (cp %[2]s COPY && ingot --db COPY upgrade), or the bank itself, with the file writable "+
			"(ingot --db %[2]s upgrade; serve and any change upgrade it too, keeping the file as it was beside it)",
			ledger.ErrUpgradeNeeded, path, version, schemaVersion)
	}
	return nil
}

// absolute is path made absolute, for a command run from another directory.
func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// view runs fn in a bbolt read transaction, with a damaged file's panics
// and faults turned into ledger.ErrCorrupt; update, in a read-write one of
// its own.
func (s *Store) view(fn func(*bolt.Tx) error) error   { return s.tx(s.db.View, fn) }
func (s *Store) update(fn func(*bolt.Tx) error) error { return s.tx(s.db.Update, fn) }

func (s *Store) tx(run func(func(*bolt.Tx) error) error, fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverDamage(&err)
	if err = run(fn); errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// recoverDamage, deferred, turns a panic (bbolt's on a damaged page, or a
// memory fault on a file cut short) into an error naming the file.
func (s *Store) recoverDamage(err *error) {
	if r := recover(); r != nil {
		*err = damaged(s.path, r)
	}
}

func damaged(path string, r any) error {
	return fmt.Errorf("%w: reading %s failed (%v): the file is damaged; `ingot audit` says what it finds, and `ingot backup` copies are what to restore from", ledger.ErrCorrupt, path, r)
}

// View runs fn in a read-only transaction.
func (s *Store) View(ctx context.Context, fn func(ledger.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.view(func(btx *bolt.Tx) error { return fn(&tx{btx: btx}) })
}

// Update runs fn in the committer's next group and returns once the group
// is durable (see the package documentation).
func (s *Store) Update(ctx context.Context, fn func(ledger.Tx) error) error {
	if s.unwritable {
		return fmt.Errorf("%w: %s is not writable by this process (uid %d; its permissions, or a read-only mount): "+
			"it can be read, audited and backed up, not changed; change it as its owner, or through the server that holds it", ErrReadOnly, s.path, os.Geteuid())
	}
	if s.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, s.path)
	}
	if err := s.stoppedErr(); err != nil {
		return err
	}
	return s.queue.Submit(ctx, fn, ErrClosed)
}

func (s *Store) stoppedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.stopped
}

// commitLoop is the committer; a damaged page's memory fault in it is a
// panic that commit turns into an error (recoverDamage).
func (s *Store) commitLoop() {
	debug.SetPanicOnFault(true)
	s.queue.Run(maxGroup, s.commit)
}

// commit runs a group in one transaction and answers its calls.
func (s *Store) commit(group []*groupcommit.Call) {
	start := time.Now()
	if err := s.stoppedErr(); err != nil {
		groupcommit.Answer(group, err)
		return
	}
	live := group[:0:0]
	for _, c := range group {
		if err := c.Ctx.Err(); err != nil {
			c.Answer(err)
		} else {
			live = append(live, c)
		}
	}
	for len(live) > 0 {
		btx, err := s.db.Begin(true)
		if err != nil {
			groupcommit.Answer(live, fmt.Errorf("boltstore: begin: %w", err))
			return
		}
		t := &tx{btx: btx, cache: s.cache, pending: recordcache.Writes{}}
		var done, refused []*groupcommit.Call
		var refusals []error
		redo := false
		for i, c := range live {
			t.wrote = false
			err := s.run(c.Fn, t)
			if err == nil {
				done = append(done, c)
				continue
			}
			if !t.wrote {
				refused, refusals = append(refused, c), append(refusals, err)
				continue
			}
			// Its writes are in the transaction: run the group again
			// without it.
			s.rollback(btx)
			c.Answer(err)
			live = append(live[:i:i], live[i+1:]...)
			redo = true
			break
		}
		if redo {
			continue
		}
		err = s.commitTx(btx)
		if err == nil {
			s.cache.Commit(t.pending)
			if s.onCommit != nil && len(done) > 0 {
				// Before the answers: whoever is answered sees its commit
				// counted.
				s.onCommit(len(done), time.Since(start))
			}
		}
		groupcommit.Answer(done, err)
		for i, c := range refused {
			c.Answer(refusals[i])
		}
		return
	}
}

// run runs one call's function, its panics turned into errors.
func (s *Store) run(fn func(ledger.Tx) error, t *tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			t.wrote = true // whatever it did is suspect: roll it back
			err = damaged(s.path, r)
		}
	}()
	return fn(t)
}

func (s *Store) rollback(btx *bolt.Tx) {
	defer func() { _ = recover() }() // a damaged file may panic again
	_ = btx.Rollback()
}

// commitTx commits; after a failure the store stops (see Update).
func (s *Store) commitTx(btx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = damaged(s.path, r)
		}
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			// bbolt writes a commit's pages where the file's state does not
			// reach and its meta page last: a write refused for space leaves
			// the file as it was, and the next commit may find the space.
			err = fmt.Errorf("boltstore: commit to %s: %w", s.path, err)
		} else if err != nil {
			err = fmt.Errorf("boltstore: commit to %s failed, and the store refuses every change until the bank is opened again: %w", s.path, err)
			s.mu.Lock()
			if s.stopped == nil {
				s.stopped = err
			}
			s.mu.Unlock()
		}
	}()
	return btx.Commit()
}

// Backup writes a consistent copy of the file to w.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	err := s.view(func(btx *bolt.Tx) error {
		var err error
		n, err = btx.WriteTo(ctxWriter{ctx, w})
		return err
	})
	return n, err
}

// ctxWriter stops a copy once its context is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Close stops the committer, after the group it is running, and closes the
// file. Calls waiting for it get ErrClosed.
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
	return s.db.Close()
}
