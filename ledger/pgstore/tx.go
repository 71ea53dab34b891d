package pgstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingot-hpc/ingot/internal/recordcache"
	"github.com/ingot-hpc/ingot/ledger"
)

// querier runs statements: a View's pgx.Tx, or the committer's connection
// inside the group's transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// tx is a ledger.Tx on a PostgreSQL transaction.
//
// In an Update, round trips and statements are what a change costs
// (docs/performance.md), so the committer's transaction makes few: it
// reads records through the store's record cache (a call's writes in
// call, those of the group's calls done in group: internal/recordcache),
// and its writes wait as rows (pending.go), to be sent with a read that
// could see them or at the group's end (commit.go). Every write puts what
// it changes in call, or forgets there what it changes and does not work
// out (an index).
type tx struct {
	q        querier
	ctx      context.Context
	writable bool
	// head is, in an Update, the journal's head as this transaction has
	// it: locked when the group began, moved by AppendEntry.
	head ledger.JournalHead
	// cache is the committer's (nil in a View).
	cache       *recordcache.Cache
	group, call recordcache.Writes
	// rows are the call's writes not sent yet, groupRows those of the
	// calls done; counters and groupCounters the highest id each counter
	// gave or saw stored, which the group's end keeps in the counters
	// table. wrote says the call has sent writes; index is the call's
	// place in its group; careful, that each call's writes are sent when
	// it ends, on their own (commit.go).
	rows, groupRows         pending
	counters, groupCounters map[string]uint64
	wrote, careful          bool
	index                   int
	// spoilt is set when a statement fails: PostgreSQL has then aborted
	// the group's transaction, which runs again without the statement's
	// call (or, if its rows were of several, carefully: commit.go).
	spoilt *errSpoilt
	// failed is the first statement of the current call that failed: the
	// call fails with it, whatever its function returns.
	failed error
	// carried are the liens and charges stored as references to journal
	// entries (putCarried), by key: a change appends the entry after.
	carried map[string]any
}

// statement is a write to send, and the call of its rows: -1 for several,
// or for the group's own.
type statement struct {
	what, sql string
	args      []any
	call      int
}

// page is how many rows an iterator reads at a time: it holds no rows
// open while it calls its function, which may run statements of its own
// on the same connection.
const page = 256

// note remembers a failed statement (see tx.failed) and returns err.
func (t *tx) note(err error) error {
	if t.failed == nil {
		t.failed = err
	}
	return err
}

// put makes a row wait (see tx): a record's columns, under its key, with
// the tags of the indexes it changes.
func (t *tx) put(what string, tb int, key string, args []any, tags ...string) error {
	if !t.writable {
		return fmt.Errorf("%w: cannot %s in a read", ErrReadOnly, what)
	}
	t.rows.put(tb, key, row{args: args, call: t.index}, tags...)
	return nil
}

// remove makes the deletion of a row wait: args are its key's columns.
func (t *tx) remove(what string, tb int, key string, args ...any) error {
	if !t.writable {
		return fmt.Errorf("%w: cannot %s in a read", ErrReadOnly, what)
	}
	t.rows.put(tb, key, row{args: args, deleted: true, call: t.index})
	return nil
}

// count raises a counter to an id given or stored.
func (t *tx) count(counter string, id uint64) {
	if t.counters == nil {
		t.counters = map[string]uint64{}
	}
	t.counters[counter] = max(t.counters[counter], id)
}

// layers are the writes a read looks through before the cache.
func (t *tx) layers() []recordcache.Writes { return []recordcache.Writes{t.call, t.group} }

// cached is key's record through the cache, or what read finds.
func cached[T any](t *tx, key string, read func() (T, bool, error)) (T, bool, error) {
	return recordcache.Get(t.cache, key, t.layers(), read)
}

// written records v as what the call wrote at key.
func (t *tx) written(key string, v any) {
	if t.cache != nil {
		t.call.Put(key, v)
	}
}

// forget records that the call changed key in a way not worked out.
func (t *tx) forget(key string) {
	if t.cache != nil {
		t.call.Forget(key)
	}
}

// known is key's record as the cache and the layers have it.
func (t *tx) known(key string) (any, bool) { return t.cache.Lookup(key, t.layers()...) }

// cacheKey names a record in the cache: its kind and its key's parts.
func cacheKey(kind string, parts ...any) string {
	k := kind
	for _, p := range parts {
		k += "\x00" + fmt.Sprint(p)
	}
	return k
}

// send runs a read (sql) and returns its rows, which are the caller's:
// done must be called once they are read. The writes waiting that the
// read could see go first, in the same round trip: all of them if dep is
// empty, otherwise only if one of them is under or tagged with dep (the
// read is of that record or index entry alone; see pending).
func (t *tx) send(dep, sql string, args ...any) (rows pgx.Rows, done func() error, err error) {
	if !t.waiting(dep) {
		rows, err := t.q.Query(t.ctx, sql, args...)
		return rows, func() error { return nil }, err
	}
	br, err := t.sendBatch(t.sending(), sql, args...)
	if err != nil {
		return nil, nil, err
	}
	if rows, err = br.Query(); err != nil {
		br.Close()
		return nil, nil, err
	}
	return rows, br.Close, nil
}

// waiting says whether a read that depends on dep ("": on anything) must
// send the writes waiting first.
func (t *tx) waiting(dep string) bool {
	if dep == "" {
		return !t.rows.empty() || !t.groupRows.empty()
	}
	return t.rows.has(dep) || t.groupRows.has(dep)
}

// sending takes every write waiting, the group's and the call's, as the
// statements that send them.
func (t *tx) sending() []statement {
	all := t.groupRows
	all.merge(&t.rows)
	t.wrote = t.wrote || !t.rows.empty()
	t.rows, t.groupRows = pending{}, pending{}
	return all.statements()
}

// sendBatch sends statements and then sql (if not empty) in one pipeline,
// and reads the statements' results; the caller reads sql's.
func (t *tx) sendBatch(statements []statement, sql string, args ...any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	for _, s := range statements {
		b.Queue(s.sql, s.args...)
	}
	if sql != "" {
		b.Queue(sql, args...)
	}
	br := t.q.SendBatch(t.ctx, b)
	for _, s := range statements {
		if _, err := br.Exec(); err != nil {
			br.Close()
			err = t.note(fmt.Errorf("pgstore: %s: %w", s.what, err))
			t.spoil(s.call, err)
			return nil, err
		}
	}
	return br, nil
}

// spoil records that a statement of a call failed, in a View too (where
// nothing reads it).
func (t *tx) spoil(call int, err error) {
	if t.spoilt == nil {
		t.spoilt = &errSpoilt{call: call, err: err}
	}
}

// query runs a read, after the writes waiting that it depends on (send),
// and collects its rows with scan. A read that fails spoils the call (see tx).
func query[T any](t *tx, dep, what string, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, done, err := t.send(dep, sql, args...)
	if err == nil {
		var out []T
		out, err = pgx.CollectRows(rows, scan)
		if doneErr := done(); err == nil {
			err = doneErr
		}
		if err == nil {
			return out, nil
		}
	}
	err = t.note(fmt.Errorf("pgstore: read %s: %w", what, err))
	t.spoil(t.index, err)
	return nil, err
}

// getDoc reads one JSON document; ok is false if there is none.
func getDoc[T any](t *tx, dep, what, sql string, args ...any) (v T, ok bool, err error) {
	raws, err := query(t, dep, what, pgx.RowTo[[]byte], sql, args...)
	if err != nil || len(raws) == 0 {
		return v, false, err
	}
	if err := json.Unmarshal(raws[0], &v); err != nil {
		return v, false, fmt.Errorf("%w: %s: %v", ledger.ErrCorrupt, what, err)
	}
	return v, true, nil
}

// listDocs reads JSON documents, in the query's order.
func listDocs[T any](t *tx, dep, what, sql string, args ...any) ([]T, error) {
	raws, err := query(t, dep, what, pgx.RowTo[[]byte], sql, args...)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, raw := range raws {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ledger.ErrCorrupt, what, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// putDoc makes a row wait whose last column is v's JSON (see put).
func putDoc(t *tx, what string, tb int, key string, v any, args []any, tags ...string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("pgstore: encode %s: %w", what, err)
	}
	return t.put("write "+what, tb, key, append(args, raw), tags...)
}

// bigint is n as PostgreSQL's bigint, numbers beyond it as its largest.
func bigint(n uint64) int64 { return int64(min(n, math.MaxInt64)) }

// next reserves the next id of a counter (liens, charges, allocations),
// which is also the name of the records it numbers: the new id is known to
// have none.
func (t *tx) next(counter string) (uint64, error) {
	if !t.writable {
		return 0, fmt.Errorf("%w: cannot number a new %s in a read", ErrReadOnly, counter)
	}
	key := cacheKey("counter", counter)
	last, ok, err := cached(t, key, func() (uint64, bool, error) {
		values, err := query(t, key, "the counter of "+counter, pgx.RowTo[int64], `SELECT value FROM counters WHERE name = $1`, counter)
		if err != nil || len(values) == 0 {
			return 0, false, err
		}
		return uint64(values[0]), true, nil
	})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: the counter of %s is missing", ledger.ErrCorrupt, counter)
	}
	// Ids stored in this group go to the table only at its end.
	id := max(last, t.counters[counter], t.groupCounters[counter]) + 1
	t.written(key, id)
	t.count(counter, id)
	t.written(cacheKey(counter, id), recordcache.Absent{})
	return id, nil
}

// stored keeps the counter at or above an id stored, in the cache and,
// at the group's end, in the table: next never gives it again.
func (t *tx) stored(counter string, id uint64) {
	key := cacheKey("counter", counter)
	if last, ok := t.known(key); ok && last.(uint64) < id {
		t.written(key, id)
	}
	t.count(counter, id)
}

func (t *tx) Settings() (ledger.Settings, bool, error) {
	return cached(t, "settings", func() (ledger.Settings, bool, error) {
		return getDoc[ledger.Settings](t, "settings", "the settings", `SELECT doc FROM settings`)
	})
}

func (t *tx) PutSettings(s ledger.Settings) error {
	t.written("settings", s)
	return putDoc(t, "the settings", settingsTable, "settings", s, nil)
}

func (t *tx) Node(name string) (ledger.Node, bool, error) {
	return cached(t, cacheKey("node", name), func() (ledger.Node, bool, error) {
		return getDoc[ledger.Node](t, cacheKey("node", name), "node "+name, `SELECT doc FROM nodes WHERE name = $1`, name)
	})
}

func (t *tx) PutNode(n ledger.Node) error {
	t.written(cacheKey("node", n.Name), recordcache.Clone(n))
	return putDoc(t, "node "+n.Name, nodesTable, cacheKey("node", n.Name), n, []any{n.Name})
}

func (t *tx) Nodes() ([]ledger.Node, error) {
	return listDocs[ledger.Node](t, "", "the nodes", `SELECT doc FROM nodes ORDER BY name`)
}

// Subtree reads the node and the names below it ('/' follows '.').
func (t *tx) Subtree(name string) ([]ledger.Node, error) {
	nodes, err := listDocs[ledger.Node](t, "", "the subtree of "+name,
		`SELECT doc FROM nodes WHERE name = $1 OR (name >= $1 || '.' AND name < $1 || '/') ORDER BY name`, name)
	if err != nil || len(nodes) == 0 || nodes[0].Name != name {
		return nil, err
	}
	return nodes, nil
}

func (t *tx) User(name string) (ledger.User, bool, error) {
	return cached(t, cacheKey("user", name), func() (ledger.User, bool, error) {
		return getDoc[ledger.User](t, cacheKey("user", name), "user "+name, `SELECT doc FROM users WHERE name = $1`, name)
	})
}

func (t *tx) PutUser(u ledger.User) error {
	t.written(cacheKey("user", u.Name), recordcache.Clone(u))
	return putDoc(t, "user "+u.Name, usersTable, cacheKey("user", u.Name), u, []any{u.Name})
}

func (t *tx) Users() ([]ledger.User, error) {
	return listDocs[ledger.User](t, "", "the users", `SELECT doc FROM users ORDER BY name`)
}

func (t *tx) Machine(name string) (ledger.Machine, bool, error) {
	return cached(t, cacheKey("machine", name), func() (ledger.Machine, bool, error) {
		return getDoc[ledger.Machine](t, cacheKey("machine", name), "machine "+name, `SELECT doc FROM machines WHERE name = $1`, name)
	})
}

func (t *tx) PutMachine(m ledger.Machine) error {
	t.written(cacheKey("machine", m.Name), m)
	return putDoc(t, "machine "+m.Name, machinesTable, cacheKey("machine", m.Name), m, []any{m.Name})
}

func (t *tx) Machines() ([]ledger.Machine, error) {
	return listDocs[ledger.Machine](t, "", "the machines", `SELECT doc FROM machines ORDER BY name`)
}

func (t *tx) NextAllocationID() (uint64, error) { return t.next("allocations") }

func (t *tx) Allocation(id uint64) (ledger.Allocation, bool, error) {
	return cached(t, cacheKey("allocations", id), func() (ledger.Allocation, bool, error) {
		return getDoc[ledger.Allocation](t, cacheKey("allocations", id), fmt.Sprintf("allocation %d", id), `SELECT doc FROM allocations WHERE id = $1`, bigint(id))
	})
}

// PutAllocation stores the state and its history. An allocation's
// account, start and end never change: only its account's lists may gain
// it.
func (t *tx) PutAllocation(a ledger.Allocation, seq uint64) error {
	t.written(cacheKey("allocations", a.ID), a)
	t.stored("allocations", a.ID)
	list := cacheKey("account allocations", a.Account)
	if ids, ok := t.known(list); !ok {
		t.forget(list)
	} else if ids := ids.([]uint64); !slices.Contains(ids, a.ID) {
		ids = append(slices.Clone(ids), a.ID)
		slices.Sort(ids)
		t.written(list, ids)
	}
	live := cacheKey("live allocations", a.Account)
	e := idEnd{id: a.ID, end: endNanos(a.End), start: startNanos(a.Start)}
	if l, ok := t.known(live); !ok {
		t.forget(live)
	} else if l := l.(liveList); !l.has(e) && e.end > l.from {
		t.written(live, l.with(e, upcoming(a) != nil, a.UsedUp()))
	} else if moved, ok := l.sorted(e, a.UsedUp()); ok {
		t.written(live, moved)
	}
	what := fmt.Sprintf("allocation %d", a.ID)
	if err := putDoc(t, what, allocationsTable, cacheKey("allocations", a.ID), a, []any{bigint(a.ID), a.Account, endNanos(a.End), upcoming(a), a.UsedUp()}, list, live); err != nil {
		return err
	}
	return putDoc(t, what+"'s history", historyTable, cacheKey("history", a.ID, seq), a, []any{bigint(a.ID), bigint(seq)})
}

// AccountAllocations lists the account's allocations: their ids through
// the cache (an account has a few; every change reads them), then each.
func (t *tx) AccountAllocations(account string) ([]ledger.Allocation, error) {
	ids, _, err := cached(t, cacheKey("account allocations", account), func() ([]uint64, bool, error) {
		all, err := listDocs[ledger.Allocation](t, cacheKey("account allocations", account), "the allocations of "+account, `SELECT doc FROM allocations WHERE account = $1 ORDER BY id`, account)
		ids := []uint64{}
		for _, a := range all {
			t.cache.Remember(cacheKey("allocations", a.ID), a, t.layers()...)
			ids = append(ids, a.ID)
		}
		return ids, err == nil, err
	})
	if err != nil {
		return nil, err
	}
	var out []ledger.Allocation
	for _, id := range ids {
		a, ok, err := t.Allocation(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: allocation %d of %s is missing", ledger.ErrCorrupt, id, account)
		}
		out = append(out, a)
	}
	return out, nil
}

// endNanos is an end as the ends_ns column has it: Unix nanoseconds, the
// greatest bigint for no end, 0 before 1970 and the bigint below the
// greatest from 2262-04-11, past which Unix nanoseconds do not reach
// (migrations/0004_allocation_ends.sql).
func endNanos(end time.Time) int64 {
	switch {
	case end.IsZero():
		return math.MaxInt64
	case end.Before(time.Unix(0, 0)):
		return 0
	case !end.Before(lastEndNanos):
		return math.MaxInt64 - 1
	}
	return end.UnixNano()
}

var lastEndNanos = time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC)

// startNanos is a start as the starts_ns column has it: endNanos, but the
// least bigint for the zero time (before every time asked).
func startNanos(start time.Time) int64 {
	if start.IsZero() {
		return math.MinInt64
	}
	return endNanos(start)
}

// upcoming is the starts_ns a new allocation is stored with: its start if
// it starts after it was made, else NULL. The upsert keeps a NULL
// (pending.go): once a change has found the allocation started
// (ActiveAllocations), it is listed by end alone.
func upcoming(a ledger.Allocation) any {
	if a.Created.IsZero() || !a.Start.After(a.Created) {
		return nil
	}
	return startNanos(a.Start)
}

// liveList is what the cache keeps of an account's allocations that have
// not ended: the id, end (endNanos) and start (startNanos) of each whose
// end was after from when they were read, and of each stored since, in
// two lists: those listed by end (starts_ns NULL) in id order, and those
// listed by start (starts_ns not NULL) in the order of their starts, so
// that a change walks the allocations started and looks at the first of
// those to start alone, however many an account has preset. It is never
// changed in place (the cache hands out copies of the struct alone).
// Those listed by end that are used up (used_up) are in a third list,
// which no change walks: an account may have thousands.
type liveList struct {
	from     int64
	ends     []idEnd // in id order
	upcoming []idEnd // by start, then id
	usedUp   []idEnd // in id order
}

type idEnd struct {
	id         uint64
	end, start int64
}

func byID(e idEnd, id uint64) int { return cmp.Compare(e.id, id) }

func byStart(a, b idEnd) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.id, b.id)) }

// has says whether l lists e: by its id among those listed by end, by
// its start among those to start.
func (l liveList) has(e idEnd) bool {
	if _, ok := slices.BinarySearchFunc(l.ends, e.id, byID); ok {
		return true
	}
	if _, ok := slices.BinarySearchFunc(l.usedUp, e.id, byID); ok {
		return true
	}
	_, ok := slices.BinarySearchFunc(l.upcoming, e, byStart)
	return ok
}

// with is l with e added, among those to start if upcoming, else among
// those used up if usedUp.
func (l liveList) with(e idEnd, upcoming, usedUp bool) liveList {
	switch {
	case upcoming:
		k, _ := slices.BinarySearchFunc(l.upcoming, e, byStart)
		l.upcoming = slices.Insert(slices.Clone(l.upcoming), k, e)
	case usedUp:
		k, _ := slices.BinarySearchFunc(l.usedUp, e.id, byID)
		l.usedUp = slices.Insert(slices.Clone(l.usedUp), k, e)
	default:
		k, _ := slices.BinarySearchFunc(l.ends, e.id, byID)
		l.ends = slices.Insert(slices.Clone(l.ends), k, e)
	}
	return l
}

// sorted is l with e, listed by end, moved to those used up or back as
// usedUp says; ok is false if it is where it belongs (or not listed by
// end).
func (l liveList) sorted(e idEnd, usedUp bool) (liveList, bool) {
	from, to := &l.ends, &l.usedUp
	if !usedUp {
		from, to = to, from
	}
	i, ok := slices.BinarySearchFunc(*from, e.id, byID)
	if !ok {
		return l, false
	}
	moved := (*from)[i]
	*from = slices.Delete(slices.Clone(*from), i, i+1)
	k, _ := slices.BinarySearchFunc(*to, e.id, byID)
	*to = slices.Insert(slices.Clone(*to), k, moved)
	return l, true
}

// started is how many of l's allocations to start have started by at
// (startNanos): the first ones.
func (l liveList) started(at int64) int {
	k := 0
	for k < len(l.upcoming) && l.upcoming[k].start <= at {
		k++
	}
	return k
}

// endSlack is how far below an asked time LiveAllocations reads ends_ns:
// the migration read the ends of the rows it found to the microsecond,
// rounded.
const endSlack = int64(time.Microsecond)

// LiveAllocations asks the indexes by end and by start in one statement
// (no change asks: a balance and the audit do).
func (t *tx) LiveAllocations(account string, at time.Time) ([]ledger.Allocation, error) {
	from := max(endNanos(at), math.MinInt64+endSlack) - endSlack
	if at.IsZero() {
		from = math.MinInt64
	}
	return listDocsWhere(t, account, func(a ledger.Allocation) bool { return a.End.IsZero() || a.End.After(at) },
		`SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NULL AND NOT used_up AND ends_ns > $2
			UNION ALL SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NULL AND used_up AND ends_ns > $2
			UNION ALL SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NOT NULL AND ends_ns > $2`, account, from)
}

// live is, for a change, the cache's list of the account's allocations
// not ended by at (endSlack below), without those listed by end that
// have ended, read by the indexes by end and by start if the cache has
// none read at or before at. Its slices may be the cache's own: the
// caller reads them, never changes them.
func (t *tx) live(account string, at time.Time) (liveList, error) {
	key := cacheKey("live allocations", account)
	asked := endNanos(at)
	if at.IsZero() {
		asked = math.MinInt64
	}
	if l, ok := t.known(key); ok && l.(liveList).from <= asked {
		list := l.(liveList)
		ended := 0
		for _, e := range list.ends {
			if e.end <= asked-endSlack {
				ended++
			}
		}
		if ended == 0 {
			return list, nil // the cache's: read, never changed
		}
		ends := make([]idEnd, 0, len(list.ends)-ended)
		for _, e := range list.ends {
			if e.end > asked-endSlack {
				ends = append(ends, e)
			}
		}
		if ended > 64 && ended > len(ends) {
			// Most of the list has ended: keep the rest, from now on.
			t.cache.Remember(key, liveList{from: asked, ends: ends, upcoming: list.upcoming, usedUp: list.usedUp}, t.layers()...)
		}
		return liveList{from: list.from, ends: ends, upcoming: list.upcoming, usedUp: list.usedUp}, nil
	}
	type row struct {
		doc              []byte
		end              int64
		upcoming, usedUp bool
	}
	from := max(asked, math.MinInt64+endSlack) - endSlack
	rows, err := query(t, key, "the allocations of "+account+" that have not ended", func(r pgx.CollectableRow) (row, error) {
		var v row
		return v, r.Scan(&v.doc, &v.end, &v.upcoming, &v.usedUp)
	}, `SELECT doc, ends_ns, false, false FROM allocations WHERE account = $1 AND starts_ns IS NULL AND NOT used_up AND ends_ns > $2
		UNION ALL SELECT doc, ends_ns, false, true FROM allocations WHERE account = $1 AND starts_ns IS NULL AND used_up AND ends_ns > $2
		UNION ALL SELECT doc, ends_ns, true, false FROM allocations WHERE account = $1 AND starts_ns IS NOT NULL AND ends_ns > $2`, account, from)
	if err != nil {
		return liveList{}, err
	}
	list := liveList{from: asked}
	for _, r := range rows {
		var a ledger.Allocation
		if err := json.Unmarshal(r.doc, &a); err != nil {
			return liveList{}, fmt.Errorf("%w: the allocations of %s: %v", ledger.ErrCorrupt, account, err)
		}
		e := idEnd{id: a.ID, end: r.end, start: startNanos(a.Start)}
		switch {
		case r.upcoming:
			// Read when it starts: the cache keeps the allocations in use.
			list.upcoming = append(list.upcoming, e)
		case r.usedUp:
			// Read when asked for: no change takes from them.
			list.usedUp = append(list.usedUp, e)
		default:
			t.cache.Remember(cacheKey("allocations", a.ID), a, t.layers()...)
			list.ends = append(list.ends, e)
		}
	}
	slices.SortFunc(list.ends, func(a, b idEnd) int { return cmp.Compare(a.id, b.id) })
	slices.SortFunc(list.usedUp, func(a, b idEnd) int { return cmp.Compare(a.id, b.id) })
	slices.SortFunc(list.upcoming, byStart)
	t.cache.Remember(key, list, t.layers()...)
	return list, nil
}

// allocationsOf reads the allocations listed, each through the cache, and
// keeps those keep accepts.
func (t *tx) allocationsOf(account string, listed []idEnd, keep func(ledger.Allocation) bool) ([]ledger.Allocation, error) {
	var out []ledger.Allocation
	for _, e := range listed {
		a, ok, err := t.Allocation(e.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: allocation %d of %s is missing", ledger.ErrCorrupt, e.id, account)
		}
		if keep(a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// ActiveAllocations answers a change from the cache's list (live):
// those listed by end, and the first of those to start that have started
// by at, whose rows it marks as listed by end (starts_ns NULL), so that
// reads find them there: the index by start then lists those not started
// yet, give or take the ones that started since the account's last
// change; a used-up one among them goes to those used up. A read, which
// has no cache, asks both indexes for the allocations started by at and
// not ended.
func (t *tx) ActiveAllocations(account string, at time.Time) ([]ledger.Allocation, error) {
	active := func(a ledger.Allocation) bool { return a.ActiveAt(at) && !a.UsedUp() }
	asked := startNanos(at)
	if t.cache == nil {
		return listDocsWhere(t, account, active, `SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NULL AND NOT used_up AND ends_ns > $2
			UNION ALL SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NOT NULL AND starts_ns <= $3 AND ends_ns > $2`,
			account, max(asked, math.MinInt64+endSlack)-endSlack, asked)
	}
	l, err := t.live(account, at)
	if err != nil {
		return nil, err
	}
	out, err := t.allocationsOf(account, l.ends, active)
	k := l.started(asked)
	if err != nil || k == 0 {
		return out, err
	}
	begun, err := t.allocationsOf(account, l.upcoming[:k], active)
	if err != nil {
		return nil, err
	}
	out = append(out, begun...)
	slices.SortFunc(out, func(a, b ledger.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	key := cacheKey("live allocations", account)
	cached, ok := t.known(key)
	if !t.writable || !ok {
		return out, nil
	}
	list := cached.(liveList)
	k = list.started(asked)
	moved := liveList{from: list.from, ends: list.ends, upcoming: list.upcoming[k:], usedUp: list.usedUp}
	for _, e := range list.upcoming[:k] {
		a, ok, err := t.Allocation(e.id)
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: allocation %d of %s is missing (%v)", ledger.ErrCorrupt, e.id, account, err)
		}
		if err := putDoc(t, fmt.Sprintf("allocation %d", a.ID), allocationsTable, cacheKey("allocations", a.ID), a,
			[]any{bigint(a.ID), a.Account, endNanos(a.End), nil, a.UsedUp()}, key); err != nil {
			return nil, err
		}
		moved = moved.with(e, false, a.UsedUp())
	}
	t.written(key, moved)
	return out, nil
}

// UsedUpAllocations answers a change from the cache's list (live): those
// used up, and any of those to start that has started by at and is used
// up; a read asks the index of those used up.
func (t *tx) UsedUpAllocations(account string, at time.Time, n int) ([]ledger.Allocation, error) {
	active := func(a ledger.Allocation) bool { return a.ActiveAt(at) && a.UsedUp() }
	asked := startNanos(at)
	var out []ledger.Allocation
	if t.cache == nil {
		// The index of those used up in its order, so that a limit reads
		// as many (a few more than n: the slack of ends_ns may list some
		// that have ended), then those listed by start that have started.
		from := max(asked, math.MinInt64+endSlack) - endSlack
		sql, args := `SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NULL AND used_up AND ends_ns > $2 ORDER BY ends_ns, id`, []any{account, from}
		if n >= 0 {
			sql, args = sql+` LIMIT $3`, append(args, n+8)
		}
		listed, err := listDocsWhere(t, account, active, sql, args...)
		if err != nil {
			return nil, err
		}
		begun, err := listDocsWhere(t, account, active, `SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NOT NULL AND starts_ns <= $3 AND used_up AND ends_ns > $2`,
			account, from, asked)
		if err != nil {
			return nil, err
		}
		out = append(listed, begun...)
	} else {
		l, err := t.live(account, at)
		if err != nil {
			return nil, err
		}
		listed := slices.DeleteFunc(slices.Clone(l.usedUp), func(e idEnd) bool { return e.end <= max(asked, math.MinInt64+endSlack)-endSlack })
		if n >= 0 && len(listed) > n+8 {
			slices.SortFunc(listed, func(a, b idEnd) int { return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.id, b.id)) })
			listed = listed[:n+8]
		}
		listed = append(listed, l.upcoming[:l.started(asked)]...)
		if out, err = t.allocationsOf(account, listed, active); err != nil {
			return nil, err
		}
	}
	if n >= 0 && len(out) > n {
		slices.SortFunc(out, func(a, b ledger.Allocation) int {
			return cmp.Or(cmp.Compare(endNanos(a.End), endNanos(b.End)), cmp.Compare(a.ID, b.ID))
		})
		out = out[:n]
	}
	slices.SortFunc(out, func(a, b ledger.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// NextStart answers a change from the cache's list: the first of those to
// start after at; a read asks the index by start.
func (t *tx) NextStart(account string, at time.Time) (time.Time, bool, error) {
	after := func(a ledger.Allocation) bool { return a.Start.After(at) }
	var next []ledger.Allocation
	var err error
	if t.cache == nil {
		// The first few from a microsecond before: the migration read the
		// starts of the rows it found to the microsecond.
		next, err = listDocsWhere(t, account, after, `SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NOT NULL AND starts_ns > $2
			ORDER BY starts_ns, id LIMIT 8`, account, max(startNanos(at), math.MinInt64+endSlack)-endSlack)
	} else {
		// The list has each start to the nanosecond: the first is read.
		var l liveList
		if l, err = t.live(account, at); err == nil {
			if k := l.started(startNanos(at)); k < len(l.upcoming) {
				next, err = t.allocationsOf(account, l.upcoming[k:k+1], after)
			}
		}
	}
	if err != nil || len(next) == 0 {
		return time.Time{}, false, err
	}
	first := slices.MinFunc(next, func(a, b ledger.Allocation) int { return a.Start.Compare(b.Start) })
	return first.Start, true, nil
}

// UpcomingAllocations reads the index by start after t, from a
// microsecond before it as NextStart does, n rows and as many more as
// started within that microsecond.
func (t *tx) UpcomingAllocations(account string, at time.Time, n int) ([]ledger.Allocation, error) {
	from := max(startNanos(at), math.MinInt64+endSlack) - endSlack
	sql := `SELECT doc FROM allocations WHERE account = $1 AND starts_ns IS NOT NULL AND starts_ns > $2 ORDER BY starts_ns, id`
	for limit := n + 8; ; limit *= 2 {
		query, args := sql, []any{account, from}
		if n >= 0 {
			query, args = sql+" LIMIT $3", append(args, limit)
		}
		as, err := listDocs[ledger.Allocation](t, "", "the allocations of "+account+" that start later", query, args...)
		if err != nil {
			return nil, err
		}
		read := len(as)
		as = slices.DeleteFunc(as, func(a ledger.Allocation) bool { return !a.Start.After(at) })
		if n < 0 {
			return as, nil
		}
		if len(as) >= n || read < limit {
			return as[:min(len(as), n)], nil
		}
	}
}

// listDocsWhere reads the account's allocations a query finds, and keeps
// those keep accepts, in id order.
func listDocsWhere(t *tx, account string, keep func(ledger.Allocation) bool, sql string, args ...any) ([]ledger.Allocation, error) {
	as, err := listDocs[ledger.Allocation](t, "", "the allocations of "+account, sql, args...)
	if err != nil {
		return nil, err
	}
	as = slices.DeleteFunc(as, func(a ledger.Allocation) bool { return !keep(a) })
	slices.SortFunc(as, func(a, b ledger.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	return as, nil
}

func (t *tx) Allocations() ([]ledger.Allocation, error) {
	return listDocs[ledger.Allocation](t, "", "the allocations", `SELECT doc FROM allocations ORDER BY id`)
}

func (t *tx) AllocationAsOf(id, seq uint64) (ledger.Allocation, bool, error) {
	return getDoc[ledger.Allocation](t, "", fmt.Sprintf("the history of allocation %d", id),
		`SELECT doc FROM balance_history WHERE allocation = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1`, bigint(id), bigint(seq))
}

// makeHead is the journal's head from its row (time is NULL while the
// journal is empty).
func makeHead(seq int64, tm *time.Time, hash []byte) (ledger.JournalHead, error) {
	h := ledger.JournalHead{Seq: uint64(seq)}
	if len(hash) != sha256.Size {
		return h, fmt.Errorf("%w: the journal head's hash has %d bytes", ledger.ErrCorrupt, len(hash))
	}
	copy(h.Hash[:], hash)
	if tm != nil {
		h.Time = tm.UTC()
	}
	return h, nil
}

func (t *tx) Head() (ledger.JournalHead, error) {
	if t.writable {
		return t.head, nil
	}
	var seq int64
	var tm *time.Time
	var hash []byte
	if err := t.q.QueryRow(t.ctx, `SELECT seq, time, hash FROM journal_head`).Scan(&seq, &tm, &hash); err != nil {
		return ledger.JournalHead{}, t.note(fmt.Errorf("pgstore: read the journal head: %w", err))
	}
	return makeHead(seq, tm, hash)
}

// scanEntry reads a journal row: seq, time, hash, body.
func scanEntry(row pgx.CollectableRow) (ledger.StoredEntry, error) {
	var e ledger.StoredEntry
	var seq int64
	var hash []byte
	if err := row.Scan(&seq, &e.Time, &hash, &e.Body); err != nil {
		return e, err
	}
	e.Seq, e.Time = uint64(seq), e.Time.UTC()
	if len(hash) != sha256.Size {
		return e, fmt.Errorf("%w: journal entry %d: its hash has %d bytes", ledger.ErrCorrupt, seq, len(hash))
	}
	copy(e.Hash[:], hash)
	return e, nil
}

func (t *tx) Entry(seq uint64) (ledger.StoredEntry, bool, error) {
	es, err := query(t, cacheKey("journal", seq), fmt.Sprintf("journal entry %d", seq), scanEntry, `SELECT seq, time, hash, body FROM journal WHERE seq = $1`, bigint(seq))
	if err != nil || len(es) == 0 {
		return ledger.StoredEntry{}, false, err
	}
	return es[0], true, nil
}

// AppendEntry stores the entry and lists it under its nodes; the head row
// moves at the group's end (commit.go).
func (t *tx) AppendEntry(e ledger.StoredEntry) error {
	if !t.writable {
		return fmt.Errorf("%w: cannot append to the journal in a read", ErrReadOnly)
	}
	if e.Seq != t.head.Seq+1 {
		return fmt.Errorf("%w: journal entry %d appended after entry %d", ledger.ErrCorrupt, e.Seq, t.head.Seq)
	}
	what := fmt.Sprintf("append journal entry %d", e.Seq)
	if err := t.put(what, journalTable, cacheKey("journal", e.Seq), []any{bigint(e.Seq), e.Time, e.Hash[:], e.Body}); err != nil {
		return err
	}
	for _, node := range e.Terms {
		if err := t.put(what, journalNodesTable, cacheKey("journal node", node, e.Seq), []any{node, bigint(e.Seq)}); err != nil {
			return err
		}
	}
	t.head = ledger.JournalHead{Seq: e.Seq, Time: e.Time, Hash: e.Hash}
	return nil
}

// entries calls fn for the entries a keyset query finds, a page at a
// time: sql takes the page's bounds ($1, $2) and its size ($3); after
// each page, next moves the bounds past its last entry.
func (t *tx) entries(what, sql string, lo, hi uint64, args []any, next func(last uint64, lo, hi *uint64), fn func(ledger.StoredEntry) (bool, error)) error {
	for lo <= hi {
		es, err := query(t, "", what, scanEntry, sql, append([]any{bigint(lo), bigint(hi), page}, args...)...)
		if err != nil {
			return err
		}
		for _, e := range es {
			if more, err := fn(e); err != nil || !more {
				return err
			}
		}
		if len(es) < page {
			return nil
		}
		next(es[len(es)-1].Seq, &lo, &hi)
	}
	return nil
}

func (t *tx) Entries(from, to uint64, fn func(ledger.StoredEntry) (bool, error)) error {
	return t.entries("the journal", `SELECT seq, time, hash, body FROM journal WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3`,
		from, min(to, math.MaxInt64), nil, func(last uint64, lo, _ *uint64) { *lo = last + 1 }, fn)
}

func (t *tx) NodeEntries(node string, from, to uint64, reverse bool, fn func(ledger.StoredEntry) (bool, error)) error {
	what, to := "the journal of "+node, min(to, math.MaxInt64)
	const sql = `SELECT j.seq, j.time, j.hash, j.body FROM journal_nodes n JOIN journal j ON j.seq = n.seq
		WHERE n.node = $4 AND n.seq >= $1 AND n.seq <= $2 ORDER BY n.seq`
	if reverse {
		return t.entries(what, sql+` DESC LIMIT $3`, from, to, []any{node}, func(last uint64, lo, hi *uint64) {
			if last == 0 {
				*lo = 1 // the loop's end: no entry below 1
			}
			*hi = last - 1
		}, fn)
	}
	return t.entries(what, sql+` LIMIT $3`, from, to, []any{node}, func(last uint64, lo, _ *uint64) { *lo = last + 1 }, fn)
}

func (t *tx) NodeSeqs(node string, from, to uint64, fn func(uint64) (bool, error)) error {
	for lo, hi := from, min(to, math.MaxInt64); lo <= hi; {
		seqs, err := query(t, "", "the journal index of "+node, pgx.RowTo[int64],
			`SELECT seq FROM journal_nodes WHERE node = $4 AND seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3`, bigint(lo), bigint(hi), page, node)
		if err != nil {
			return err
		}
		for _, seq := range seqs {
			if more, err := fn(uint64(seq)); err != nil || !more {
				return err
			}
		}
		if len(seqs) < page {
			return nil
		}
		lo = uint64(seqs[len(seqs)-1]) + 1
	}
	return nil
}

func (t *tx) TermSeqs(prefix string, fn func(string, uint64) (bool, error)) error {
	type row struct {
		Node string
		Seq  int64
	}
	// Keyset pages in the primary key's order. Under the "C" collation
	// text compares as bytes, so the terms with the prefix are those from
	// the prefix up to the prefix with its last byte one more.
	end := []byte(prefix)
	end[len(end)-1]++
	last := row{Node: prefix, Seq: -1}
	for {
		rows, err := query(t, "", "the journal index under "+prefix, pgx.RowToStructByPos[row],
			`SELECT node, seq FROM journal_nodes WHERE (node, seq) > ($1, $2) AND node < $3 ORDER BY node, seq LIMIT $4`,
			last.Node, last.Seq, string(end), page)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if more, err := fn(r.Node, uint64(r.Seq)); err != nil || !more {
				return err
			}
		}
		if len(rows) < page {
			return nil
		}
		last = rows[len(rows)-1]
	}
}

// rowCount is how many rows a table holds.
func (t *tx) rowCount(table string) (uint64, error) {
	n, err := query(t, "", "the number of "+table, pgx.RowTo[int64], `SELECT count(*) FROM `+table)
	if err != nil {
		return 0, err
	}
	return uint64(n[0]), nil
}

func (t *tx) NextLienID() (uint64, error) { return t.next("liens") }

func (t *tx) Lien(id uint64) (ledger.Lien, bool, error) {
	return cached(t, cacheKey("liens", id), func() (ledger.Lien, bool, error) {
		return first(carriedDocs(t, cacheKey("liens", id), fmt.Sprintf("lien %d", id), "liens", carriedLien, `r.id = $1`, bigint(id)))
	})
}

// PutLien stores the lien with the columns its indexes are on: once it is
// finished, as a reference to the journal entry that carries it
// (carrier), else whole. A new lien (one the cache knows was not there)
// is its job's newest. The row is tagged with its job and its account,
// which a lien keeps for life, so that the reads of either send it first
// (pending).
func (t *tx) PutLien(l ledger.Lien, carrier uint64) error {
	key, newest := cacheKey("liens", l.ID), cacheKey("job lien", l.Machine, l.JobID)
	if old, ok := t.known(key); ok && old == (recordcache.Absent{}) {
		t.written(newest, l.ID)
	} else {
		t.forget(newest)
	}
	t.written(key, recordcache.Clone(l))
	t.stored("liens", l.ID)
	t.expiryBound(l)
	return putCarried(t, fmt.Sprintf("lien %d", l.ID), liensTable, key, l, carrier, l.State != ledger.LienActive,
		[]any{bigint(l.ID), l.Account, l.Machine, l.JobID, l.State == ledger.LienActive, l.Expires.UnixNano()},
		newest, cacheKey("account liens", l.Account))
}

// putCarried makes v's row wait: its columns args, then its document, or
// (ref) none and the number of the journal entry carrier that carries it
// whole. The change appends that entry after it stores v: until then
// reads find v in t.carried.
func putCarried(t *tx, what string, tb int, key string, v any, carrier uint64, ref bool, args []any, tags ...string) error {
	if carrier == 0 || !ref {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("pgstore: encode %s: %w", what, err)
		}
		return t.put("write "+what, tb, key, append(args, raw, nil), tags...)
	}
	if t.carried == nil {
		t.carried = map[string]any{}
	}
	t.carried[key] = v
	return t.put("write "+what, tb, key, append(args, nil, bigint(carrier)), tags...)
}

// carriedLien and carriedCharge are the lien and the charge a journal
// entry carries (nil: none).
func carriedLien(e ledger.Entry) *ledger.Lien { return e.Lien }

func carriedCharge(e ledger.Entry) *ledger.Charge { return e.Charge }

// carriedDocs reads the liens or the charges (table) that where selects, in
// id order: each row's document, or, for a row kept as a reference, the
// record the journal entry it names carries (read with it, in one query),
// or the one this change stored before appending that entry.
func carriedDocs[T any](t *tx, dep, what, table string, carries func(ledger.Entry) *T, where string, args ...any) ([]T, error) {
	type row struct {
		id      int64
		doc     []byte
		carrier *int64
		body    []byte
	}
	rows, err := query(t, dep, what, func(r pgx.CollectableRow) (row, error) {
		var v row
		return v, r.Scan(&v.id, &v.doc, &v.carrier, &v.body)
	}, `SELECT r.id, r.doc, r.carrier, j.body FROM `+table+` r LEFT JOIN journal j ON j.seq = r.carrier WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		if v, ok := t.carried[cacheKey(table, uint64(r.id))].(T); ok && r.doc == nil && r.body == nil {
			out = append(out, v) // its entry is this change's, not appended yet
			continue
		}
		v, err := checkedRecord(r.doc, r.carrier, r.body, carries)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s %d: %v", ledger.ErrCorrupt, what, table, r.id, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// first is the first of vs, if any.
func first[T any](vs []T, err error) (T, bool, error) {
	var v T
	if err != nil || len(vs) == 0 {
		return v, false, err
	}
	return vs[0], true, nil
}

// carrierOf is the journal entry a lien or a charge (table) is kept as a
// reference to, for ledger.Carriers; ok is false for one kept whole.
func (t *tx) carrierOf(table string, id uint64) (uint64, bool, error) {
	seqs, err := query(t, cacheKey(table, id), fmt.Sprintf("the carrier of %s %d", table, id), pgx.RowTo[*int64],
		`SELECT carrier FROM `+table+` WHERE id = $1`, bigint(id))
	if err != nil || len(seqs) == 0 || seqs[0] == nil {
		return 0, false, err
	}
	return uint64(*seqs[0]), true, nil
}

func (t *tx) LienCarrier(id uint64) (uint64, bool, error) { return t.carrierOf("liens", id) }

func (t *tx) ChargeCarrier(id uint64) (uint64, bool, error) { return t.carrierOf("charges", id) }

// JobLien finds the job's newest lien id through the cache, then the lien.
func (t *tx) JobLien(machine, job string) (ledger.Lien, bool, error) {
	id, ok, err := cached(t, cacheKey("job lien", machine, job), func() (uint64, bool, error) {
		l, ok, err := first(carriedDocs(t, cacheKey("job lien", machine, job), fmt.Sprintf("the lien of job %s on %s", job, machine), "liens", carriedLien,
			`r.machine = $1 AND r.job = $2 ORDER BY r.id DESC LIMIT 1`, machine, job))
		if ok {
			t.cache.Remember(cacheKey("liens", l.ID), l, t.layers()...)
		}
		return l.ID, ok, err
	})
	if err != nil || !ok {
		return ledger.Lien{}, false, err
	}
	l, ok, err := t.Lien(id)
	if err == nil && !ok {
		err = fmt.Errorf("%w: lien %d of job %s on %s is missing", ledger.ErrCorrupt, id, job, machine)
	}
	return l, ok, err
}

func (t *tx) ActiveLiens(account string) ([]ledger.Lien, error) {
	return listDocs[ledger.Lien](t, cacheKey("account liens", account), "the active liens of "+account, `SELECT doc FROM liens WHERE active AND account = $1 ORDER BY id`, account)
}

// ActiveLiensExpiring answers from the cache when it knows a bound below
// every active lien's expiry of the account (expiryBound) and to is under
// it: every change asks which liens have expired by now, and nearly always
// none has.
func (t *tx) ActiveLiensExpiring(account string, from, to time.Time, limit int) ([]ledger.Lien, error) {
	if to.IsZero() || !to.After(from) {
		return nil, nil
	}
	lo := int64(math.MinInt64)
	if !from.IsZero() {
		lo = from.UnixNano()
	}
	what, args := "the liens of "+account+" expiring", []any{account, lo, to.UnixNano(), limitArg(limit)}
	const expiring = `SELECT doc, expires_ns, id FROM liens WHERE active AND account = $1 AND expires_ns > $2 AND expires_ns <= $3
		ORDER BY expires_ns, id LIMIT $4`
	if t.cache == nil {
		return listDocs[ledger.Lien](t, cacheKey("account liens", account), what, `SELECT doc FROM (`+expiring+`) l`, args...)
	}
	key := cacheKey("expiry bound", account)
	if bound, ok := t.known(key); ok && to.UnixNano() < bound.(int64) {
		return nil, nil
	}
	// The liens, and the earliest expiry of all the account's active
	// liens, in one statement: a row with no lien if none expires.
	type row struct {
		doc   []byte
		bound *int64
	}
	rows, err := query(t, cacheKey("account liens", account), what, func(r pgx.CollectableRow) (row, error) {
		var v row
		return v, r.Scan(&v.doc, &v.bound)
	}, `SELECT l.doc, b.bound FROM (SELECT min(expires_ns) AS bound FROM liens WHERE active AND account = $1) b
		LEFT JOIN LATERAL (`+expiring+`) l ON true ORDER BY l.expires_ns, l.id`, args...)
	if err != nil {
		return nil, err
	}
	var out []ledger.Lien
	for _, r := range rows {
		if r.doc == nil {
			continue
		}
		var l ledger.Lien
		if err := json.Unmarshal(r.doc, &l); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ledger.ErrCorrupt, what, err)
		}
		out = append(out, l)
	}
	bound := int64(math.MaxInt64) // no active lien
	if len(rows) > 0 && rows[0].bound != nil {
		bound = *rows[0].bound
	}
	t.cache.Remember(key, bound, t.layers()...)
	return out, nil
}

// expiryBound keeps the account's expiry bound below a lien just stored:
// a lien that is no longer active leaves it a bound, if not the least.
func (t *tx) expiryBound(l ledger.Lien) {
	key := cacheKey("expiry bound", l.Account)
	bound, ok := t.known(key)
	switch {
	case !ok:
		t.forget(key)
	case l.State == ledger.LienActive && l.Expires.UnixNano() < bound.(int64):
		t.written(key, l.Expires.UnixNano())
	}
}

// limitArg is a LIMIT's argument: NULL, no limit, for 0.
func limitArg(limit int) *int {
	if limit <= 0 {
		return nil
	}
	return &limit
}

func (t *tx) ExpiredLiens(at time.Time, limit int) ([]ledger.Lien, error) {
	if limit <= 0 {
		return nil, nil
	}
	return listDocs[ledger.Lien](t, "", "the expired liens",
		`SELECT doc FROM liens WHERE active AND expires_ns <= $1 ORDER BY account, expires_ns, id LIMIT $2`, at.UnixNano(), limit)
}

// eachCarried calls fn for the liens or the charges (table) in id order,
// a page at a time (carriedDocs).
func eachCarried[T any](t *tx, table string, carries func(ledger.Entry) *T, id func(T) uint64, fn func(T) (bool, error)) error {
	for after := int64(math.MinInt64); ; {
		vs, err := carriedDocs(t, "", "the "+table, table, carries, `r.id > $1 ORDER BY r.id LIMIT $2`, after, page)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if more, err := fn(v); err != nil || !more {
				return err
			}
		}
		if len(vs) < page {
			return nil
		}
		after = bigint(id(vs[len(vs)-1]))
	}
}

func (t *tx) Liens(fn func(ledger.Lien) (bool, error)) error {
	return eachCarried(t, "liens", carriedLien, func(l ledger.Lien) uint64 { return l.ID }, fn)
}

func (t *tx) LienCount() (uint64, error) { return t.rowCount("liens") }

func (t *tx) NextChargeID() (uint64, error) { return t.next("charges") }

// Charge reads a charge; the cache keeps none (recordcache), but knows
// the ids just numbered have none.
func (t *tx) Charge(id uint64) (ledger.Charge, bool, error) {
	return cached(t, cacheKey("charges", id), func() (ledger.Charge, bool, error) {
		return first(carriedDocs(t, cacheKey("charges", id), fmt.Sprintf("charge %d", id), "charges", carriedCharge, `r.id = $1`, bigint(id)))
	})
}

// PutCharge keeps a charge as a reference to the journal entry that
// carries it (carrier), as PutLien does a finished lien.
func (t *tx) PutCharge(c ledger.Charge, carrier uint64) error {
	t.written(cacheKey("charges", c.ID), c)
	t.forget(cacheKey("job charges", c.Machine, c.JobID))
	t.stored("charges", c.ID)
	return putCarried(t, fmt.Sprintf("charge %d", c.ID), chargesTable, cacheKey("charges", c.ID), c, carrier, true,
		[]any{bigint(c.ID), c.Machine, c.JobID}, cacheKey("job charges", c.Machine, c.JobID))
}

// JobCharges reads a job's charges; the cache knows only which jobs have
// none, as every job has until it ends.
func (t *tx) JobCharges(machine, job string) ([]ledger.Charge, error) {
	key := cacheKey("job charges", machine, job)
	if none, ok := t.known(key); ok && none == (recordcache.Absent{}) {
		return nil, nil
	}
	charges, err := carriedDocs(t, key, fmt.Sprintf("the charges of job %s on %s", job, machine), "charges", carriedCharge,
		`r.machine = $1 AND r.job = $2 ORDER BY r.id`, machine, job)
	if err == nil && len(charges) == 0 {
		t.cache.Remember(key, recordcache.Absent{}, t.layers()...)
	}
	return charges, err
}

func (t *tx) Charges(fn func(ledger.Charge) (bool, error)) error {
	return eachCarried(t, "charges", carriedCharge, func(c ledger.Charge) uint64 { return c.ID }, fn)
}

func (t *tx) ChargeCount() (uint64, error) { return t.rowCount("charges") }

func (t *tx) Record(kind, key string) (ledger.Record, bool, error) {
	value, ok, err := cached(t, cacheKey("records", kind, key), func() ([]byte, bool, error) {
		values, err := query(t, cacheKey("records", kind, key), fmt.Sprintf("record %s/%s", kind, key), pgx.RowTo[[]byte], `SELECT value FROM records WHERE kind = $1 AND key = $2`, kind, key)
		if err != nil || len(values) == 0 {
			return nil, false, err
		}
		return values[0], true, nil
	})
	return ledger.Record{Kind: kind, Key: key, Value: value}, ok, err
}

func (t *tx) PutRecord(r ledger.Record) error {
	if r.Deleted {
		key := cacheKey("records", r.Kind, r.Key)
		t.written(key, recordcache.Absent{})
		return t.remove(fmt.Sprintf("delete record %s/%s", r.Kind, r.Key), recordsTable, key, r.Kind, r.Key)
	}
	if len(r.Value) == 0 {
		return fmt.Errorf("%w: record %s/%s has no value", ledger.ErrInvalid, r.Kind, r.Key)
	}
	key := cacheKey("records", r.Kind, r.Key)
	t.written(key, bytes.Clone([]byte(r.Value)))
	return t.put(fmt.Sprintf("write record %s/%s", r.Kind, r.Key), recordsTable, key, []any{r.Kind, r.Key, bytes.Clone([]byte(r.Value))})
}

func (t *tx) Records(kind string) ([]ledger.Record, error) {
	return query(t, "", "the records of kind "+kind, func(row pgx.CollectableRow) (ledger.Record, error) {
		r := ledger.Record{Kind: kind}
		return r, row.Scan(&r.Key, (*[]byte)(&r.Value))
	}, `SELECT key, value FROM records WHERE kind = $1 ORDER BY key`, kind)
}

// request is a requests row: key, then record.
type request struct {
	key ledger.RequestKey
	rec ledger.RequestRecord
}

func scanRequest(row pgx.CollectableRow) (request, error) {
	var r request
	var hash []byte
	var seq int64
	if err := row.Scan(&r.key.Client, &r.key.ID, &hash, &seq, &r.rec.Time, &r.rec.Result); err != nil {
		return r, err
	}
	if len(hash) != sha256.Size {
		return r, fmt.Errorf("%w: request %q of %s: its content hash has %d bytes", ledger.ErrCorrupt, r.key.ID, r.key.Client, len(hash))
	}
	copy(r.rec.ContentHash[:], hash)
	r.rec.Seq, r.rec.Time = uint64(seq), r.rec.Time.UTC()
	return r, nil
}

const requestColumns = `client, id, content_hash, seq, time, answer`

func (t *tx) Request(k ledger.RequestKey) (ledger.RequestRecord, bool, error) {
	rs, err := query(t, cacheKey("request", k.Client, k.ID), fmt.Sprintf("request %q of %s", k.ID, k.Client), scanRequest,
		`SELECT `+requestColumns+` FROM requests WHERE client = $1 AND id = $2`, k.Client, k.ID)
	if err != nil || len(rs) == 0 {
		return ledger.RequestRecord{}, false, err
	}
	return rs[0].rec, true, nil
}

func (t *tx) PutRequest(k ledger.RequestKey, r ledger.RequestRecord) error {
	return t.put(fmt.Sprintf("keep the answer to request %q of %s", k.ID, k.Client), requestsTable, cacheKey("request", k.Client, k.ID),
		[]any{k.Client, k.ID, r.ContentHash[:], bigint(r.Seq), r.Time, nonNil(r.Result)})
}

// nonNil is b, or no bytes rather than NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (t *tx) DeleteRequest(k ledger.RequestKey) error {
	return t.remove(fmt.Sprintf("delete request %q of %s", k.ID, k.Client), requestsTable, cacheKey("request", k.Client, k.ID), k.Client, k.ID)
}

func (t *tx) Requests(fn func(ledger.RequestKey, ledger.RequestRecord) (bool, error)) error {
	var after *ledger.RequestKey
	for {
		var rs []request
		var err error
		if after == nil {
			rs, err = query(t, "", "the requests", scanRequest, `SELECT `+requestColumns+` FROM requests ORDER BY client, id LIMIT $1`, page)
		} else {
			rs, err = query(t, "", "the requests", scanRequest, `SELECT `+requestColumns+` FROM requests
				WHERE (client, id) > ($2, $3) ORDER BY client, id LIMIT $1`, page, after.Client, after.ID)
		}
		if err != nil {
			return err
		}
		for _, r := range rs {
			if more, err := fn(r.key, r.rec); err != nil || !more {
				return err
			}
		}
		if len(rs) < page {
			return nil
		}
		after = &rs[len(rs)-1].key
	}
}
