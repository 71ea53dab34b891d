package ledger

import (
	"context"
	"crypto/sha256"
	"io"
	"time"

	"github.com/shopspring/decimal"
)

// ByProject holds amounts per project and allocation.
type ByProject map[string]map[uint64]decimal.Decimal

// Add adds amount to project's part of allocation.
func (b ByProject) Add(project string, allocation uint64, amount decimal.Decimal) {
	if b[project] == nil {
		b[project] = map[uint64]decimal.Decimal{}
	}
	b[project][allocation] = b[project][allocation].Add(amount)
}

// PerAllocation sums over the projects.
func (b ByProject) PerAllocation() map[uint64]decimal.Decimal {
	out := map[uint64]decimal.Decimal{}
	for _, m := range b {
		for id, v := range m {
			out[id] = out[id].Add(v)
		}
	}
	return out
}

// StoredEntry is a journal entry as an engine stores it: its number and
// time, the bytes of its encoding (Body: binary.go's layout, or JSON
// before schema 12; its previous entry's hash inside) and the SHA-256 of
// exactly those bytes.
// The audit hashes the stored bytes; nothing encodes an entry again.
type StoredEntry struct {
	Seq  uint64
	Time time.Time
	Hash [sha256.Size]byte
	Body []byte
	// Terms are what the journal's index lists the entry under
	// (IndexTerms): the nodes it concerns, each with its ancestors, its
	// job and its kind, as Tx.NodeEntries finds it. Set when it is
	// appended; not read back.
	Terms []string
}

// JournalHead is what a new entry needs of the one before it.
type JournalHead struct {
	Seq  uint64
	Time time.Time
	Hash [sha256.Size]byte
}

// Store is a storage engine. The ledger's logic is written once against it;
// each engine (boltstore, later pgstore) passes the same conformance tests
// (package ledgertest). An engine stores records and keeps the indexes the
// getters below name; it knows nothing of balances or HFS.
type Store interface {
	// View runs fn in a read-only transaction with a consistent snapshot.
	// It must not be called from inside an Update's function.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction and makes its writes
	// durable before returning nil. The engine may run fn in one
	// transaction with other callers' functions (group commit) and may run
	// fn more than once, so fn keeps its effects inside the transaction. If
	// fn returns an error, none of its writes persist and the others' are
	// unaffected. After a failed write to the disk the engine refuses every
	// later Update until it is opened again.
	Update(ctx context.Context, fn func(Tx) error) error
	// Backup writes a consistent copy of the whole store to w while other
	// transactions go on.
	Backup(ctx context.Context, w io.Writer) (int64, error)
	// Check runs the engine's own consistency check of its storage (pages,
	// free lists) and lists what it finds wrong; the audit calls it.
	Check(ctx context.Context) ([]string, error)
	Close() error
}

// Tx is one transaction. Getters report a missing record with ok = false,
// never with an error. Writes are only allowed in Update.
type Tx interface {
	Settings() (s Settings, ok bool, err error)
	PutSettings(Settings) error

	Node(name string) (n Node, ok bool, err error)
	PutNode(Node) error
	// Nodes lists every node in name order.
	Nodes() ([]Node, error)
	// Subtree lists a node and its descendants in name order.
	Subtree(name string) ([]Node, error)

	User(name string) (u User, ok bool, err error)
	PutUser(User) error
	Users() ([]User, error)

	Machine(name string) (m Machine, ok bool, err error)
	PutMachine(Machine) error
	Machines() ([]Machine, error)

	// NextAllocationID reserves a new allocation id: ids start at 1, and
	// each is above those reserved before and those of the allocations
	// stored (a bank copied into the store goes on from its own ids). So
	// do NextLienID and NextChargeID.
	NextAllocationID() (uint64, error)
	Allocation(id uint64) (a Allocation, ok bool, err error)
	// PutAllocation stores the allocation's state after journal entry seq,
	// both as the current state and in its history.
	PutAllocation(a Allocation, seq uint64) error
	// AccountAllocations lists the account's allocations in id order.
	AccountAllocations(account string) ([]Allocation, error)
	// LiveAllocations lists, in id order, the account's allocations that
	// have not ended by t: those with no end or an end after t (active at
	// t, or starting later). An index by account and end, so that the
	// hot paths never read the allocations that have ended, however many
	// an account gathers (an allocation's start and end never change).
	LiveAllocations(account string, t time.Time) ([]Allocation, error)
	// ActiveAllocations lists, in id order, the account's allocations
	// active at t (started by t and not ended) that are not used up
	// (Allocation.UsedUp, as stored). The hot paths read these alone, so that
	// neither the allocations that have ended, nor those that start later
	// (an account may have thousands preset), nor those used up cost them.
	ActiveAllocations(account string, t time.Time) ([]Allocation, error)
	// UsedUpAllocations lists, in id order, the account's allocations
	// active at t that ActiveAllocations leaves out as used up: the n
	// that end first (every one if n < 0; those with the same end by id),
	// for a balance, a charge beyond what the others hold, a transfer's
	// search for an allocation of the same window, and the audit.
	UsedUpAllocations(account string, t time.Time, n int) ([]Allocation, error)
	// NextStart is the earliest start after t among the account's
	// allocations, ok false if none starts after t: when time alone brings
	// one into ActiveAllocations. t is at or after the last change's time
	// (a store may forget the starts that had passed by then).
	NextStart(account string, t time.Time) (start time.Time, ok bool, err error)
	// UpcomingAllocations lists the account's allocations that start
	// after t, in the order of the index by start (start, then id), the
	// first n of them (every one if n < 0): what a balance shows coming
	// reads as many as it lists, however many are preset. t is at or
	// after the last change's time, as for NextStart.
	UpcomingAllocations(account string, t time.Time, n int) ([]Allocation, error)
	// Allocations lists every allocation in id order.
	Allocations() ([]Allocation, error)
	// AllocationAsOf is the allocation's state after the last entry
	// numbered <= seq that changed it; ok is false if it did not exist yet.
	AllocationAsOf(id uint64, seq uint64) (a Allocation, ok bool, err error)

	// Head is the newest entry's number, time and hash (zero values for an
	// empty journal), without reading the entry.
	Head() (JournalHead, error)
	Entry(seq uint64) (e StoredEntry, ok bool, err error)
	// AppendEntry stores e, which must be numbered one after Head's.
	AppendEntry(e StoredEntry) error
	// Entries calls fn for the stored entries from..to (inclusive) in order
	// until fn returns false or an error. e.Body is valid only during fn.
	Entries(from, to uint64, fn func(e StoredEntry) (bool, error)) error
	// NodeEntries is Entries for the entries whose Terms hold node (a
	// node's name, a JobTerm or a KindTerm), newest first if reverse: an
	// index, so that a query about one node or job reads only its entries.
	NodeEntries(node string, from, to uint64, reverse bool, fn func(e StoredEntry) (bool, error)) error
	// NodeSeqs is NodeEntries in order with the entries' numbers only,
	// read from the index alone.
	NodeSeqs(node string, from, to uint64, fn func(seq uint64) (bool, error)) error
	// TermSeqs calls fn for every term of the index that begins with
	// prefix and every entry it lists under it, in the order of the terms'
	// bytes and then of the numbers: the full audit's one pass over the
	// jobs' terms. The prefix is not empty and its last byte is not 0xff.
	TermSeqs(prefix string, fn func(term string, seq uint64) (bool, error)) error

	NextLienID() (uint64, error)
	Lien(id uint64) (l Lien, ok bool, err error)
	// PutLien stores a lien (new, or replacing the stored one of its id)
	// and keeps its indexes: by job, and while it is active, by account
	// and expiry. carrier, if not 0, is the journal entry that carries the
	// lien as given, which this change appends: an engine may keep a
	// finished lien as a reference to it (Carriers).
	PutLien(l Lien, carrier uint64) error
	// JobLien is the newest lien of a job on a machine.
	JobLien(machine, job string) (l Lien, ok bool, err error)
	// ActiveLiens lists the account's active liens in id order, including
	// those past their expiry that the sweeper has not marked yet.
	ActiveLiens(account string) ([]Lien, error)
	// ActiveLiensExpiring lists the account's active liens whose expiry is
	// after from and at or before to, soonest first (ties by id), at most
	// limit of them (0: all).
	ActiveLiensExpiring(account string, from, to time.Time, limit int) ([]Lien, error)
	// ExpiredLiens lists at most limit active liens of any account whose
	// expiry is at or before t.
	ExpiredLiens(t time.Time, limit int) ([]Lien, error)
	// Liens calls fn for every lien in id order until fn returns false or
	// an error.
	Liens(fn func(Lien) (bool, error)) error
	// LienCount is how many liens are stored, without reading them.
	LienCount() (uint64, error)

	NextChargeID() (uint64, error)
	Charge(id uint64) (c Charge, ok bool, err error)
	// PutCharge stores a charge (new, or replacing the stored one of its
	// id) and keeps its index by job; carrier is PutLien's.
	PutCharge(c Charge, carrier uint64) error
	// JobCharges lists a job's charges in id order.
	JobCharges(machine, job string) ([]Charge, error)
	// Charges calls fn for every charge in id order until fn returns false
	// or an error.
	Charges(fn func(Charge) (bool, error)) error
	// ChargeCount is how many charges are stored, without reading them.
	ChargeCount() (uint64, error)

	Record(kind, key string) (r Record, ok bool, err error)
	// PutRecord stores a record, or removes it when r.Deleted.
	PutRecord(r Record) error
	// Records lists the records of a kind in key order.
	Records(kind string) ([]Record, error)

	Request(key RequestKey) (r RequestRecord, ok bool, err error)
	PutRequest(key RequestKey, r RequestRecord) error
	DeleteRequest(key RequestKey) error
	// Requests calls fn for every request record until fn returns false or
	// an error.
	Requests(fn func(RequestKey, RequestRecord) (bool, error)) error
}

// Carriers is what a Tx of an engine that keeps finished liens and
// charges as references to the journal entries carrying them (PutLien's
// carrier) tells the audit: such a record is the entry's by construction,
// so the audit checks that it names the right entry instead of comparing
// two copies.
type Carriers interface {
	// LienCarrier is the entry lien id is stored as; ok is false if the
	// lien is stored in full, or not at all.
	LienCarrier(id uint64) (seq uint64, ok bool, err error)
	// ChargeCarrier is LienCarrier for charge id.
	ChargeCarrier(id uint64) (seq uint64, ok bool, err error)
}

// RequestKey names a request: the client that sent it and its id.
type RequestKey struct {
	Client string
	ID     string
}

// RequestRecord is what is kept of a request to answer its retries.
type RequestRecord struct {
	// ContentHash is the SHA-256 of the request's kind and content.
	ContentHash [sha256.Size]byte
	// Result is the first answer, JSON-encoded; the journal entry Seq
	// carries its SHA-256 (Entry.Answer), which the audit checks.
	Result []byte
	Seq    uint64
	Time   time.Time
}
