package boltstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// schemaVersion is the layout of the buckets; Open refuses a newer one,
// and an older one (no migration is written yet: the layout changed before
// any bank was in service).
const schemaVersion = 5

// maxGroup bounds how many calls share one transaction, so that one commit
// does not hold a huge dirty page set in memory.
const maxGroup = 1024

// syncQueue bounds how many groups the committer may run ahead of the
// syncer: past it the committer waits, and calls gather into bigger groups.
const syncQueue = 2

var (
	bucketMeta        = []byte("meta")
	bucketNodes       = []byte("nodes")
	bucketUsers       = []byte("users")
	bucketMachines    = []byte("machines")
	bucketAllocations = []byte("allocations")
	bucketByAccount   = []byte("allocations_by_account")
	bucketHistory     = []byte("balance_history")
	bucketJournal     = []byte("journal")
	bucketRequests    = []byte("requests")
	bucketLiens       = []byte("liens")
	bucketLiensByJob  = []byte("liens_by_job")
	bucketLiensActive = []byte("liens_active")
	bucketLiensExpiry = []byte("liens_by_expiry")
	bucketCharges     = []byte("charges")
	bucketChargesJob  = []byte("charges_by_job")
	bucketRecords     = []byte("records")
	bucketReserved    = []byte("reserved")
	bucketCharged     = []byte("charged")
	bucketReservedSum = []byte("reserved_total")
	bucketVersions    = []byte("account_versions")
	allBuckets        = [][]byte{bucketMeta, bucketNodes, bucketUsers, bucketMachines,
		bucketAllocations, bucketByAccount, bucketHistory, bucketJournal, bucketRequests,
		bucketLiens, bucketLiensByJob, bucketLiensActive, bucketLiensExpiry,
		bucketCharges, bucketChargesJob, bucketRecords, bucketReserved, bucketCharged,
		bucketReservedSum, bucketVersions}
	keySchema   = []byte("schema")
	keySettings = []byte("settings")
	keyHead     = []byte("journal_head")
)

// ErrClosed is returned by calls on a closed store.
var ErrClosed = errors.New("boltstore: store is closed")

// ErrLocked is returned when another process holds the database file.
var ErrLocked = errors.New("boltstore: database is in use by another process")

// Options tune Open.
type Options struct {
	// ReadOnly opens the file with a shared lock, beside other readers.
	ReadOnly bool
	// LockTimeout is how long to wait for another process to release the
	// file (default 2s).
	LockTimeout time.Duration
	// OnCommit, if set, is told of each committed transaction: how many
	// Update calls it served and how long it took (the calls, the commit
	// and its fsync), for the server's metrics. It runs on the committer,
	// which every writer waits on, so it must return at once.
	OnCommit func(calls int, d time.Duration)
}

// Store is a ledger.Store on a bbolt file.
type Store struct {
	db       *bolt.DB
	calls    chan *call
	mu       sync.RWMutex // guards closed against sends on calls
	closed   bool
	finished chan struct{}
	onCommit func(calls int, d time.Duration)
	toSync   chan *group

	// The committer's own: only commitLoop touches them.
	cache     *decodedCache
	ov        *overlay
	lastGroup uint64
	epoch     uint64

	// durable is the newest group in the file; failures counts the
	// syncer's failed commits (the committer's epoch catches up with it).
	durable  atomic.Uint64
	failures atomic.Uint64
	// lastFailure is the error of the newest failed commit, for the groups
	// that ran on top of it. Only the syncer touches it.
	lastFailure error
}

type call struct {
	fn   func(ledger.Tx) error
	err  error
	done chan struct{}
}

// A group is the calls the committer ran together, on their way to the
// syncer.
type group struct {
	writes groupWrites
	calls  []*call
	epoch  uint64
	start  time.Time
}

// Open opens (creating if needed, unless read-only) the database at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	// NoFreelistSync: bbolt does not write its free-page list at every
	// commit (pages it would rewrite with each group), and rebuilds it by a
	// scan when it opens a file that was not closed cleanly, as etcd runs
	// it. Lien+charge cycles went 1.45 to 1.9 times raw bbolt in one run.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly,
		FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (waited %s for its lock)", ErrLocked, path, opts.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if err := prepare(db, opts.ReadOnly); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	s := &Store{db: db, calls: make(chan *call, maxGroup), finished: make(chan struct{}), onCommit: opts.OnCommit,
		toSync: make(chan *group, syncQueue), cache: newDecodedCache(), ov: newOverlay()}
	go s.commitLoop()
	go s.syncLoop()
	return s, nil
}

// prepare creates the buckets of a new file and checks the schema version.
func prepare(db *bolt.DB, readOnly bool) error {
	check := func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("%w: not an ingot database (no meta bucket)", ledger.ErrNotInitialized)
		}
		v := meta.Get(keySchema)
		if len(v) != 8 {
			return fmt.Errorf("%w: schema version missing", ledger.ErrCorrupt)
		}
		if got := decodeUint(v); got > schemaVersion {
			return fmt.Errorf("database schema %d is newer than this ingot's %d: upgrade ingot", got, schemaVersion)
		} else if got < schemaVersion {
			return fmt.Errorf("database schema %d is older than this ingot's %d and there is no migration: restore it with the ingot that made it", got, schemaVersion)
		}
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %s is missing: open the database once read-write (any ingot command that changes it) to add it", name)
			}
		}
		return nil
	}
	if readOnly {
		return db.View(check)
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keySchema) == nil {
			if err := meta.Put(keySchema, encodeUint(schemaVersion)); err != nil {
				return err
			}
		}
		return check(tx)
	})
}

// View runs fn in a read-only bbolt transaction.
func (s *Store) View(fn func(ledger.Tx) error) error {
	return s.db.View(func(btx *bolt.Tx) error { return fn(&tx{btx: btx}) })
}

// Update queues fn for the committer and waits until its group is durable.
func (s *Store) Update(fn func(ledger.Tx) error) error {
	c := &call{fn: fn, done: make(chan struct{})}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.calls <- c
	s.mu.RUnlock()
	<-c.done
	return c.err
}

// commitLoop takes whatever calls are waiting and runs them as a group,
// then hands the group's writes to the syncer and goes on with the next
// group while the syncer writes and syncs: the two overlap.
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
		// A group could not be written: what the overlay holds beyond the
		// file is lost, and the groups built on it fail in the syncer.
		s.ov.reset()
		s.cache.reset()
		s.epoch = f
	}
	s.ov.trim(s.durable.Load())
	s.lastGroup++
	g := &group{writes: groupWrites{group: s.lastGroup}, calls: calls, epoch: s.epoch, start: time.Now()}
	// The read transaction is closed before the group goes to the syncer:
	// bbolt's writer may have to wait for readers when it grows the file.
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
	return g
}

// syncLoop writes the groups the committer ran, as many as are waiting in
// one bbolt transaction (one fsync), and only then answers their calls.
func (s *Store) syncLoop() {
	defer close(s.finished)
	for first := range s.toSync {
		groups := []*group{first}
	gather:
		for {
			select {
			case g, ok := <-s.toSync:
				if !ok {
					break gather
				}
				groups = append(groups, g)
			default:
				break gather
			}
		}
		s.sync(groups)
	}
}

// sync commits the groups that ran on what the file holds (their epoch
// is current), and fails those that ran on top of a group that could not
// be written.
func (s *Store) sync(groups []*group) {
	epoch := s.failures.Load()
	calls, writes := 0, 0
	for _, g := range groups {
		calls += len(g.calls)
		if g.epoch == epoch {
			writes += len(g.writes.writes)
		}
	}
	var err error
	if writes > 0 {
		err = s.db.Update(func(btx *bolt.Tx) error {
			for _, g := range groups {
				if g.epoch == epoch {
					if err := apply(btx, g.writes.writes); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err != nil {
		s.lastFailure = fmt.Errorf("boltstore: commit: %w", err)
		s.failures.Add(1)
	} else {
		s.durable.Store(groups[len(groups)-1].writes.group)
		if s.onCommit != nil {
			s.onCommit(calls, time.Since(groups[0].start))
		}
	}
	for _, g := range groups {
		for _, c := range g.calls {
			if c.err == nil && (err != nil || g.epoch != epoch) {
				c.err = s.lastFailure
			}
			close(c.done)
		}
	}
}

// Backup writes a consistent copy of the database to w.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(btx *bolt.Tx) (err error) {
		n, err = btx.WriteTo(w)
		return err
	})
	return n, err
}

// Close waits for queued updates, then closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	close(s.calls)
	s.mu.Unlock()
	<-s.finished
	return s.db.Close()
}
