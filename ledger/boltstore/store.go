package boltstore

import (
	"crypto/rand"
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

// schemaVersion is the layout of the buckets; Open refuses a newer one.
// Version 6 added the write-ahead log (wal.go) and the meta key
// "log_applied"; version 7, answers kept by reference to their journal
// entries (requests.go), which an ingot of version 6 would take for
// corrupt answers on a retry. A version 5 or 6 file is the same without
// them, so a read-write open upgrades it by setting the version. Older
// ones are refused (their layout changed before any bank was in service).
const (
	schemaVersion    = 7
	oldestUpgradable = 5
)

// maxGroup bounds how many calls the committer runs as one group.
const maxGroup = 1024

// syncQueue bounds how many groups wait for the recorder, and how many for
// the syncer (for the syncer alone where it makes the records): past them
// the committer waits, and calls gather into bigger groups.
const syncQueue = 2

// bucketID names one of the file's buckets. Its number is how the log
// names the bucket (wal.go): a new bucket goes at the end, and none is
// ever renumbered. Tables indexed by it replace maps keyed by the name,
// which the committer looked up several times per write.
type bucketID uint8

const (
	bucketMeta bucketID = iota
	bucketNodes
	bucketUsers
	bucketMachines
	bucketAllocations
	bucketByAccount
	bucketHistory
	bucketJournal
	bucketRequests
	bucketLiens
	bucketLiensByJob
	bucketLiensActive
	bucketLiensExpiry
	bucketCharges
	bucketChargesJob
	bucketRecords
	bucketReserved
	bucketCharged
	bucketReservedSum
	bucketVersions
	numBuckets
)

// bucketNames are the buckets' names in the file.
var bucketNames = [numBuckets][]byte{
	bucketMeta:        []byte("meta"),
	bucketNodes:       []byte("nodes"),
	bucketUsers:       []byte("users"),
	bucketMachines:    []byte("machines"),
	bucketAllocations: []byte("allocations"),
	bucketByAccount:   []byte("allocations_by_account"),
	bucketHistory:     []byte("balance_history"),
	bucketJournal:     []byte("journal"),
	bucketRequests:    []byte("requests"),
	bucketLiens:       []byte("liens"),
	bucketLiensByJob:  []byte("liens_by_job"),
	bucketLiensActive: []byte("liens_active"),
	bucketLiensExpiry: []byte("liens_by_expiry"),
	bucketCharges:     []byte("charges"),
	bucketChargesJob:  []byte("charges_by_job"),
	bucketRecords:     []byte("records"),
	bucketReserved:    []byte("reserved"),
	bucketCharged:     []byte("charged"),
	bucketReservedSum: []byte("reserved_total"),
	bucketVersions:    []byte("account_versions"),
}

// name is the bucket's name in the file.
func (b bucketID) name() []byte { return bucketNames[b] }

func (b bucketID) String() string { return string(bucketNames[b]) }

var (
	keySchema   = []byte("schema")
	keySettings = []byte("settings")
	keyHead     = []byte("journal_head")
	keyApplied  = []byte("log_applied")
	keyBankID   = []byte("bank_id")
)

// ErrClosed is returned by calls on a closed store.
var ErrClosed = errors.New("boltstore: store is closed")

// ErrLocked is returned when another process holds the database file.
var ErrLocked = errors.New("boltstore: database is in use by another process")

// ErrReadOnly is returned by Update on a store opened read-only.
var ErrReadOnly = errors.New("boltstore: store is opened read-only")

// Options tune Open.
type Options struct {
	// ReadOnly opens the file with a shared lock, beside other readers.
	ReadOnly bool
	// LockTimeout is how long to wait for another process to release the
	// file (default 2s).
	LockTimeout time.Duration
	// OnCommit, if set, is told of each durable write of the log: how many
	// Update calls it served and how long they took from the start of the
	// first one's group to the sync's end, for the server's metrics. It
	// runs on the syncer, which every writer waits on, so it must return at
	// once.
	OnCommit func(calls int, d time.Duration)
}

// Store is a ledger.Store on a bbolt file and its write-ahead log. See the
// package documentation for how the committer, the syncer and the
// checkpointer share the work.
type Store struct {
	path     string
	db       *bolt.DB
	readOnly bool
	calls    chan *call
	// waiting counts the calls submitted and not answered yet.
	waiting  atomic.Int64
	mu       sync.RWMutex // guards closed against sends on calls
	closed   bool
	onCommit func(calls int, d time.Duration)
	// toRecord carries the committer's groups to the recorder, which
	// passes them on toSync with their log records made; without a
	// recorder (recorderStage) they are one channel, and the syncer makes
	// the records.
	toRecord chan *group
	toSync   chan *group
	recorder bool
	// spareRecords are record buffers the syncer has copied out, for the
	// recorder to use again.
	spareRecords chan []byte
	// durableGroups carries durable groups to the checkpointer.
	durableGroups *durableQueue
	finished      chan error

	// The committer's own: only commitLoop touches them.
	cache     *decodedCache
	ov        *overlay
	lastGroup uint64
	// unsynced are the undo records of the groups not yet durable, oldest
	// first, and undoBuffers the buffers of those since made durable;
	// writesPerCall is about how many writes a call of the last group
	// made, to size the next group's.
	unsynced      []groupUndos
	undoBuffers   [][]undo
	writesPerCall int
	epoch         uint64
	trimmed       uint64

	// filters say which keys the file cannot hold, for the committer's
	// lookups (filter.go); the checkpointer adds to them.
	filters keyFilters

	// bank is the bank's id, which the log's segments carry.
	bank [bankIDSize]byte

	// The checkpointer's own: the writes of a checkpoint and the hot keys
	// seen (lastOfHotKeys), reused from one checkpoint to the next.
	checkpointBuf, checkpointSorted []write
	checkpointSeen                  [numBuckets]map[string]bool
	checkpointSeenIDs               [numBuckets]map[uint64]bool

	// The syncer's own.
	log         *logWriter
	logBuf      []byte
	lastFailure error

	// durable is the newest durable group: its calls have been answered,
	// so a reader must see at least its state. published is the newest
	// state readers were given; the committer copies its overlay for
	// readers only when one asks (View), so that its writes do not copy
	// the B-trees' nodes a reader might share when none does.
	durable   atomic.Uint64
	published atomic.Pointer[snapshot]
	// checkpointed is the newest group in the bbolt file; checkpointErr the
	// error of the newest checkpoint that failed.
	checkpointed  atomic.Uint64
	checkpointErr atomic.Value
	// failures counts the syncer's failed log writes (the committer's
	// epoch catches up with it).
	failures atomic.Uint64

	// segs lists the log's segments and the newest group each holds; the
	// syncer adds, the checkpointer removes.
	segsMu sync.Mutex
	segs   []segment
}

type segment struct {
	n, last uint64
	// full says the syncer left the segment for being full, so its blocks
	// are written: it may be kept as the next spare. One it left early,
	// made from fallocate's blocks (logWriter.fresh), is removed.
	full bool
}

// A call is a function for the committer to run. snapshot asks for a copy
// of the overlay after its group, for readers (View).
type call struct {
	fn       func(ledger.Tx) error
	snapshot bool
	err      error
	done     chan struct{}
}

// A group is the calls the committer ran together, on their way to the
// syncer and then the checkpointer, with the state after them.
type group struct {
	writes groupWrites
	calls  []*call
	epoch  uint64
	start  time.Time
	snap   *snapshot
	// record is the group's log record and recordErr why it could not
	// be made (the recorder's).
	record    []byte
	recordErr error
}

// pageSize is the page size of the files Open creates (a file keeps the
// one it was made with). A checkpoint writes about 7 KB of new records a
// lien and charge, and bbolt writes each dirty page with its own system
// call: with 16 KiB pages instead of the machine's 4 KiB, cycles at 64
// goroutines took 9% less CPU (20.2 -> 15.5 us of it in the kernel) and ran
// 7% faster (five alternating pairs, docs/performance.md session 8); 8, 32
// and 64 KiB did no better.
const pageSize = 16 << 10

// Open opens (creating if needed, unless read-only) the database at path.
// It first applies what the write-ahead log holds beyond the file (all of
// it, after a crash) or, read-only, keeps it in memory for reading.
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
	// commit, and rebuilds it by a scan when it opens a file that was not
	// closed cleanly, as etcd runs it.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly,
		FreelistType: bolt.FreelistMapType, NoFreelistSync: true, InitialMmapSize: initialMmapSize, PageSize: pageSize})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (waited %s for its lock)", ErrLocked, path, opts.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	s := &Store{path: path, db: db, readOnly: opts.ReadOnly, onCommit: opts.OnCommit,
		cache: newDecodedCache(), ov: newOverlay()}
	if err := s.open(); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if !s.readOnly {
		s.calls = make(chan *call, maxGroup)
		s.toRecord = make(chan *group, syncQueue)
		s.toSync = s.toRecord
		s.spareRecords = make(chan []byte, syncQueue+2)
		s.durableGroups = newDurableQueue()
		s.finished = make(chan error, 1)
		go s.commitLoop()
		if s.recorder = recorderStage(); s.recorder {
			s.toSync = make(chan *group, syncQueue)
			go s.recordLoop()
		}
		go s.syncLoop()
		go s.checkpointLoop()
	}
	return s, nil
}

// open checks the file, recovers the log, and publishes the state.
func (s *Store) open() error {
	if err := prepare(s.db, s.readOnly); err != nil {
		return err
	}
	var applied uint64
	err := s.db.View(func(btx *bolt.Tx) error {
		applied = appliedGroup(btx)
		copy(s.bank[:], btx.Bucket(bucketMeta.name()).Get(keyBankID))
		return nil
	})
	if err != nil {
		return err
	}
	nums, logged, err := s.readLog(applied)
	if err != nil {
		return err
	}
	s.lastGroup, s.trimmed = applied, applied
	if len(logged) > 0 {
		s.lastGroup = logged[len(logged)-1].group
	}
	if !s.readOnly {
		if err := s.recover(logged, nums); err != nil {
			return err
		}
		logged = nil // in the file now
	}
	if err := s.loadResident(); err != nil {
		return err
	}
	if !s.readOnly { // only the committer asks them
		if err := s.db.View(func(btx *bolt.Tx) error {
			s.filters.build(btx)
			return nil
		}); err != nil {
			return err
		}
	}
	for _, g := range logged {
		for _, w := range g.writes {
			s.ov.set(w, g.group, -1)
		}
	}
	s.checkpointed.Store(applied)
	s.durable.Store(s.lastGroup)
	s.published.Store(&snapshot{group: s.lastGroup, trimmed: applied, ov: s.ov.copy()})
	return nil
}

// ErrLogMismatch is returned by Open when the write-ahead log beside the
// file cannot be applied to it.
var ErrLogMismatch = errors.New("boltstore: the write-ahead log does not fit the database file")

// readLog lists the log's segments and the groups in them the file (which
// holds the groups up to applied) lacks. It refuses a segment of another
// bank, and a log that starts after applied: the file was replaced by an
// older copy, and the groups between are lost to it.
func (s *Store) readLog(applied uint64) ([]uint64, []loggedGroup, error) {
	nums, err := segments(s.path)
	if err != nil {
		return nil, nil, err
	}
	var logged []loggedGroup
	first := true
	for _, n := range nums {
		file := segmentPath(s.path, n)
		info, groups, err := readSegment(file)
		if err != nil {
			return nil, nil, err
		}
		if !info.ok {
			continue
		}
		if info.bank != s.bank {
			return nil, nil, fmt.Errorf("%w: %s belongs to another bank: move the %s-wal.* files away to open the file as it is", ErrLogMismatch, file, s.path)
		}
		if first && info.prev > applied {
			return nil, nil, fmt.Errorf("%w: the log starts after change group %d but the file holds groups up to %d only (is the file an older copy?): move the %s-wal.* files away to open the file as it is", ErrLogMismatch, info.prev, applied, s.path)
		}
		first = false
		for _, g := range groups {
			if g.group > applied {
				logged = append(logged, g)
			}
		}
	}
	return nums, logged, nil
}

// loadResident reads the resident buckets into the overlay.
func (s *Store) loadResident() error {
	return s.db.View(func(btx *bolt.Tx) error {
		for b := range numBuckets {
			if residentBuckets[b] {
				if err := s.ov.load(b, btx.Bucket(b.name()).ForEach); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// recover applies the logged groups to the file, removes the old segments
// and starts a new one.
func (s *Store) recover(logged []loggedGroup, nums []uint64) error {
	if len(logged) > 0 {
		err := s.db.Update(func(btx *bolt.Tx) error {
			for _, g := range logged {
				if err := apply(btx, g.writes); err != nil {
					return err
				}
			}
			return setApplied(btx, logged[len(logged)-1].group)
		})
		if err != nil {
			return fmt.Errorf("apply the write-ahead log: %w", err)
		}
	}
	if err := s.removeSegments(nums); err != nil {
		return err
	}
	next := uint64(1)
	if len(nums) > 0 {
		next = nums[len(nums)-1] + 1
	}
	spare, err := newSpareSegment(s.path)
	if err != nil {
		return err
	}
	log, err := openLog(s.path, next, s.bank, s.lastGroup)
	if err != nil {
		return err
	}
	log.spare = spare
	s.log = log
	s.segs = []segment{{n: next}}
	return nil
}

func (s *Store) removeSegments(nums []uint64) error {
	for _, n := range nums {
		if err := removeSegmentFile(segmentPath(s.path, n)); err != nil {
			return err
		}
	}
	if len(nums) > 0 {
		return syncDir(s.path)
	}
	return nil
}

// appliedGroup is the newest group the file holds.
func appliedGroup(btx *bolt.Tx) uint64 {
	if v := btx.Bucket(bucketMeta.name()).Get(keyApplied); len(v) == 8 {
		return decodeUint(v)
	}
	return 0
}

func setApplied(btx *bolt.Tx, group uint64) error {
	return btx.Bucket(bucketMeta.name()).Put(keyApplied, encodeUint(group))
}

// prepare creates the buckets of a new file and checks the schema version.
func prepare(db *bolt.DB, readOnly bool) error {
	check := func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta.name())
		if meta == nil {
			return fmt.Errorf("%w: not an ingot database (no meta bucket)", ledger.ErrNotInitialized)
		}
		v := meta.Get(keySchema)
		if len(v) != 8 {
			return fmt.Errorf("%w: schema version missing", ledger.ErrCorrupt)
		}
		if got := decodeUint(v); got > schemaVersion {
			return fmt.Errorf("database schema %d is newer than this ingot's %d: upgrade ingot", got, schemaVersion)
		} else if got < schemaVersion && !(readOnly && got >= oldestUpgradable) {
			return fmt.Errorf("database schema %d is older than this ingot's %d and there is no migration: restore it with the ingot that made it", got, schemaVersion)
		}
		for b := range numBuckets {
			if tx.Bucket(b.name()) == nil {
				return fmt.Errorf("bucket %s is missing: open the database once read-write (any ingot command that changes it) to add it", b)
			}
		}
		return nil
	}
	if readOnly {
		return db.View(check)
	}
	return db.Update(func(tx *bolt.Tx) error {
		for b := range numBuckets {
			if _, err := tx.CreateBucketIfNotExists(b.name()); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta.name())
		if v := meta.Get(keySchema); v == nil || len(v) == 8 && decodeUint(v) >= oldestUpgradable && decodeUint(v) < schemaVersion {
			if err := meta.Put(keySchema, encodeUint(schemaVersion)); err != nil {
				return err
			}
		}
		if meta.Get(keyBankID) == nil {
			id := make([]byte, bankIDSize)
			if _, err := rand.Read(id); err != nil {
				return fmt.Errorf("make the bank's id: %w", err)
			}
			if err := meta.Put(keyBankID, id); err != nil {
				return err
			}
		}
		return check(tx)
	})
}

// View runs fn on the newest durable state: the file as the checkpointer
// left it, through the published overlay of the groups it does not hold
// yet. The two must match: a checkpoint between loading the snapshot and
// opening the transaction is seen by the applied group, and View tries
// again. A snapshot older than the durable state (the committer copies its
// overlay only when a reader asks) is brought up to date first.
func (s *Store) View(fn func(ledger.Tx) error) error {
	for {
		snap := s.published.Load()
		if snap.group < s.durable.Load() {
			if err := s.refreshSnapshot(); err != nil {
				return err
			}
			continue
		}
		btx, err := s.db.Begin(false)
		if err != nil {
			return fmt.Errorf("boltstore: read: %w", err)
		}
		applied := appliedGroup(btx)
		if applied < snap.trimmed || applied > snap.group {
			btx.Rollback()
			if applied > snap.group {
				if err := s.refreshSnapshot(); err != nil {
					return err
				}
			}
			continue
		}
		err = fn(&tx{btx: btx, view: snap.ov})
		btx.Rollback()
		return err
	}
}

// refreshSnapshot has the committer copy its overlay after its next group
// and waits until that group is durable and its state published. A group
// whose log write fails (a full disk) publishes nothing, and the request
// is made again: the committer then runs on the durable state, and a group
// of readers alone writes nothing to the log.
func (s *Store) refreshSnapshot() error {
	if s.readOnly { // its state is the one it opened, published then
		return fmt.Errorf("boltstore: a read-only store's snapshot is out of date")
	}
	var err error
	for range snapshotTries {
		err = s.submit(&call{fn: func(ledger.Tx) error { return nil }, snapshot: true, done: make(chan struct{})})
		if err == nil || errors.Is(err, ErrClosed) {
			return err
		}
	}
	return fmt.Errorf("boltstore: read: %w", err)
}

// snapshotTries bounds how often a reader asks for a snapshot while log
// writes fail.
const snapshotTries = 3

// Update queues fn for the committer and waits until its group is durable.
func (s *Store) Update(fn func(ledger.Tx) error) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.submit(&call{fn: fn, done: make(chan struct{})})
}

// submit queues c for the committer and waits for its answer.
func (s *Store) submit(c *call) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.waiting.Add(1)
	s.calls <- c
	s.mu.RUnlock()
	<-c.done
	return c.err
}

// Backup writes a consistent copy of the database to w: the file once
// the checkpointer holds every group durable when Backup was called.
func (s *Store) Backup(w io.Writer) (int64, error) {
	if err := s.flush(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.View(func(btx *bolt.Tx) (err error) {
		n, err = btx.WriteTo(w)
		return err
	})
	return n, err
}

// Close waits for queued updates and the last checkpoint, then closes the
// file.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	if !s.readOnly {
		close(s.calls)
	}
	s.mu.Unlock()
	var err error
	if !s.readOnly {
		err = <-s.finished
	}
	return errors.Join(err, s.db.Close())
}
