package ledger

import (
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

// JournalHead is what a new entry needs of the one before it: its number
// and time. Its hash the store writes in as it seals the new entry
// (SealableEntry).
type JournalHead struct {
	Seq  uint64
	Time time.Time
}

// Store is a storage engine. The ledger's logic is written once against it;
// each engine (boltstore, later pgstore) passes the same conformance tests
// (package ledgertest).
type Store interface {
	// View runs fn in a read-only transaction with a consistent snapshot.
	// It must not be called from inside an Update's function, which reads
	// through its own Tx: an engine may serve View through the same writer
	// that runs Update (boltstore does when its published state is stale),
	// and would wait for itself.
	View(fn func(Tx) error) error
	// Update runs fn in a read-write transaction and makes its writes
	// durable before returning nil. The engine may commit fn together with
	// other callers' functions (group commit) and may run fn more than once,
	// so fn keeps its effects inside the transaction. If fn returns an
	// error, none of its writes persist.
	Update(fn func(Tx) error) error
	// Backup writes a consistent copy of the whole store to w while other
	// transactions go on.
	Backup(w io.Writer) (int64, error)
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

	// NextAllocationID reserves a new allocation id (ids start at 1).
	NextAllocationID() (uint64, error)
	Allocation(id uint64) (a Allocation, ok bool, err error)
	// PutAllocation stores the allocation's state after journal entry seq,
	// both as the current state and in its history.
	PutAllocation(a Allocation, seq uint64) error
	// AccountAllocations lists the account's allocations in id order.
	AccountAllocations(account string) ([]Allocation, error)
	// Allocations lists every allocation in id order.
	Allocations() ([]Allocation, error)
	// AllocationAsOf is the allocation's state after the last entry
	// numbered <= seq that changed it; ok is false if it did not exist yet.
	AllocationAsOf(id uint64, seq uint64) (a Allocation, ok bool, err error)

	// Head is the newest entry's number and time (zero values for an
	// empty journal), without decoding the entry.
	Head() (JournalHead, error)
	Entry(seq uint64) (e Entry, ok bool, err error)
	// AppendEntry appends e (numbered head's Seq+1), encoded as enc. The
	// store seals it (SealableEntry.Seal) with the hash of entry e.Seq-1
	// once that one is sealed, in journal order, which may be after the
	// transaction and on another goroutine: enc's bytes are the store's.
	AppendEntry(e Entry, enc SealableEntry) error
	// Entries calls fn for entries from..to (inclusive) in order until fn
	// returns false or an error.
	Entries(from, to uint64, fn func(Entry) (bool, error)) error

	NextLienID() (uint64, error)
	Lien(id uint64) (l Lien, ok bool, err error)
	// PutLien stores a lien and keeps its indexes: by job, and while it is
	// active, by account and by expiry. encoded is l's encoding
	// (Lien.AppendJSON), which the caller has made already (in the journal
	// entry that carries l); an engine may store it as it is, must not
	// change it, and refuses an empty one. old is the stored lien it replaces (nil for a new one),
	// which the caller has read already.
	PutLien(l Lien, encoded []byte, old *Lien) error
	// JobLien is the newest lien of a job on a machine.
	JobLien(machine, job string) (l Lien, ok bool, err error)
	// ActiveLiens lists the account's active liens in id order, including
	// those past their expiry that the sweeper has not marked yet.
	ActiveLiens(account string) ([]Lien, error)
	// Reserved sums, per project (the node a lien is on) and allocation,
	// what the account's active liens hold at time t (liens past their
	// expiry do not count). Every lien and charge asks for it, so an engine
	// keeps running sums rather than decoding liens.
	Reserved(account string, t time.Time) (ByProject, error)
	// ReservedTotal is Reserved summed over the projects, kept as its own
	// running sum: Funds needs it on every lien and charge.
	ReservedTotal(account string, t time.Time) (map[uint64]decimal.Decimal, error)
	// NextExpiry is the earliest expiry after t of the account's active
	// liens (ok false if none).
	NextExpiry(account string, t time.Time) (expires time.Time, ok bool, err error)
	// Charged sums, per project and allocation, what the account's charges
	// took, less what was refunded: the used part of HFS demand.
	Charged(account string) (ByProject, error)

	// AccountVersion is the version the newest journal entry that changed
	// the account (its allocations, nodes, liens or charges) gave it
	// (newVersion); "" if none.
	AccountVersion(account string) (string, error)
	PutAccountVersion(account, version string) error
	// ExpiredLiens lists at most limit active liens whose expiry is at or
	// before t, soonest expiry first.
	ExpiredLiens(t time.Time, limit int) ([]Lien, error)
	Liens() ([]Lien, error)

	NextChargeID() (uint64, error)
	Charge(id uint64) (c Charge, ok bool, err error)
	// PutCharge stores a charge and keeps the charged sums; encoded is c's
	// encoding (Charge.AppendJSON), as PutLien's; old is the stored charge
	// it replaces (nil for a new one).
	PutCharge(c Charge, encoded []byte, old *Charge) error
	// JobCharges lists a job's charges in id order.
	JobCharges(machine, job string) ([]Charge, error)
	Charges() ([]Charge, error)

	Record(kind, key string) (r Record, ok bool, err error)
	// PutRecord stores a record, or removes it when r.Deleted.
	PutRecord(r Record) error
	// Records lists the records of a kind in key order.
	Records(kind string) ([]Record, error)

	Request(key RequestKey) (r RequestRecord, ok bool, err error)
	PutRequest(key RequestKey, r RequestRecord) error
}

// RequestKey names a request: the client that sent it and its id.
type RequestKey struct {
	Client string
	ID     string
}

// RequestRecord is what is kept of a request to answer its retries.
type RequestRecord struct {
	// ContentHash is the SHA-256 of the request's kind and content.
	ContentHash string `json:"content_hash"`
	// Result is the first answer, JSON-encoded.
	Result []byte    `json:"result"`
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	// Answer, given instead of Result when the record is put, appends the
	// answer's JSON to dst, so that a store can encode it straight after
	// a header of its own rather than copy it there. The store calls it
	// once, within PutRequest unless Deferred.
	Answer func(dst []byte) ([]byte, error) `json:"-"`
	// Deferred lets the store call Answer when it first needs the bytes:
	// on another goroutine, after Update's function has returned but
	// before Update does. It is for answers that nothing changes once the
	// change is made (Mutate's), and moves their encoding off the store's
	// single writer. If Answer then fails, the change fails as a failed
	// write to the disk does: it and the changes after it are undone and
	// their callers get the error.
	Deferred bool `json:"-"`
}
