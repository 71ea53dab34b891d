package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/ahead"
)

// AuditOptions say how much of the journal an audit replays.
type AuditOptions struct {
	// Full replays the whole journal and runs the engine's check of its
	// storage. Otherwise the audit starts after the entry where the last
	// clean audit ended (its checkpoint), and checks the changes made
	// since, and the stored state against them; a bank never audited is
	// audited in full.
	Full bool
	// Progress, if set, is told how many entries the audit has replayed,
	// every progressEntries of them.
	Progress func(entries uint64) `json:"-"`
}

// progressEntries is how often Audit tells AuditOptions.Progress.
const progressEntries = 10000

// AuditReport is what Audit found. The bank is sound iff Problems is empty.
type AuditReport struct {
	// From and Entries say which journal entries were replayed: Entries of
	// them from From on (From is 1 for a full audit).
	From        uint64   `json:"from"`
	Entries     uint64   `json:"entries"`
	Full        bool     `json:"full"`
	Allocations int      `json:"allocations"`
	Nodes       int      `json:"nodes"`
	Problems    []string `json:"problems"`
}

// maxProblems stops an audit of a badly damaged bank from listing every
// consequence of the first few problems.
const maxProblems = 100

// auditKind is the kind of the record where a clean audit leaves its
// checkpoint (key auditKey): like the running sums, the ledger's own, not
// journaled.
const (
	auditKind = "ledger.audit"
	auditKey  = "checkpoint"
)

// auditCheckpoint is where a clean audit ended, and the state the journal
// gave up to there, which the next audit starts from: the settings, every
// allocation, node, user and machine, and what each account's charges had
// taken, per project and allocation. Its size follows the bank's
// structure, not its history.
type auditCheckpoint struct {
	Seq         uint64               `json:"seq"`
	Hash        string               `json:"hash"`
	Time        time.Time            `json:"time"`
	Settings    *Settings            `json:"settings"`
	Allocations []Allocation         `json:"allocations"`
	Nodes       []Node               `json:"nodes"`
	Users       []User               `json:"users"`
	Machines    []Machine            `json:"machines"`
	Charged     map[string]ByProject `json:"charged"`
	// Active are the liens active after Seq, Records the records as the
	// journal last had them (a deletion kept as such).
	Active  []Lien   `json:"active,omitempty"`
	Records []Record `json:"records,omitempty"`
	// Liens and Charges count those the journal made up to Seq that the
	// store keeps (an archive takes some away), MaxLien and MaxCharge are
	// the highest ids it gave.
	Liens     uint64 `json:"liens,omitempty"`
	Charges   uint64 `json:"charges,omitempty"`
	MaxLien   uint64 `json:"max_lien,omitempty"`
	MaxCharge uint64 `json:"max_charge,omitempty"`
}

// Audit checks the bank; see AuditOptions for how much. It replays the
// journal in one consistent snapshot, streaming: it checks each entry's
// hash over the bytes stored and the hash chain, recomputes every
// allocation from the journaled deltas (checking the history kept for
// point-in-time queries after every entry) and what each account's
// charges took, compares every lien and charge the journal carries with
// the stored one, then every allocation, node, user, machine and record
// and the running sums with the stored state, and each answer kept for
// retries with the hash its journal entry carries. Its memory follows the
// bank's structure (allocations, nodes, active liens), not its history.
// A clean audit leaves its checkpoint for the next, where the bank can be
// written.
func (l *Ledger) Audit(ctx context.Context, opts AuditOptions) (AuditReport, error) {
	var rep AuditReport
	type storageCheck struct {
		damaged []string
		err     error
	}
	checked := make(chan storageCheck, 1)
	if opts.Full {
		// The engine's own check reads every page. It runs beside the
		// replay, whose pipeline leaves a core idle at times.
		go func() {
			damaged, err := l.store.Check(ctx)
			checked <- storageCheck{damaged, err}
		}()
	} else {
		checked <- storageCheck{}
	}
	var next *auditCheckpoint
	err := l.store.View(ctx, func(tx Tx) error {
		rep = AuditReport{Full: opts.Full}
		a := newAuditor(tx, &rep)
		a.progress, a.now = opts.Progress, l.Now()
		if err := a.start(opts.Full); err != nil {
			return err
		}
		if err := a.replayAll(); err != nil {
			return err
		}
		next = a.checkpoint() // before compareStored consumes the allocations
		if err := a.compareStored(); err != nil {
			return err
		}
		if err := a.checkNodeIndex(); err != nil {
			return err
		}
		if !a.full {
			return nil // the answers of the entries replayed were checked with them
		}
		return a.checkRequests()
	})
	storage := <-checked
	if storage.err != nil {
		return rep, storage.err
	}
	for i, d := range storage.damaged {
		rep.Problems = slices.Insert(rep.Problems, i, "storage: "+d)
	}
	if err != nil || len(rep.Problems) > 0 || next.Seq == 0 {
		return rep, err
	}
	raw, err := json.Marshal(next)
	if err != nil {
		return rep, fmt.Errorf("ledger: encode audit checkpoint: %w", err)
	}
	// A bank this process may only read keeps its last checkpoint.
	_ = l.store.Update(ctx, func(tx Tx) error {
		return tx.PutRecord(Record{Kind: auditKind, Key: auditKey, Value: raw})
	})
	return rep, nil
}

type auditor struct {
	tx       Tx
	rep      *AuditReport
	full     bool
	from     uint64
	prev     Entry
	prevHash string
	settings *Settings
	allocs   map[uint64]Allocation
	nodes    map[string]Node
	users    map[string]User
	machines map[string]Machine
	records  map[string]Record // as journaled since the audit's start
	// active are the liens whose newest journaled state is active; a
	// lien journaled as settled, released or expired changes no more, and
	// is compared with the stored one at once.
	active map[uint64]Lien
	// refunded are the charges refunded after the entry that made them,
	// as the journal last has them; others are compared at once.
	refunded map[uint64]Charge
	// charged is what each account's charges took, per project and
	// allocation, as the journal says.
	charged map[string]ByProject
	// indexed is, for each node, a hash of the sequence numbers of the
	// replayed entries that concern it (IndexTerms), in order: what the
	// node index must list for it.
	indexed map[string]*seqDigest
	// jobIndex is what the index must list under the jobs' terms
	// (JobTerm) in a full audit: too many terms for a digest each, they
	// are checked together (jobIndexSum).
	jobIndex jobIndexSum
	// ended are the allocations that had ended by the last entry's time,
	// whose charged sums a change may have dropped (Writer.dropEnded).
	ended map[uint64]bool
	// usedUp are the allocations stored used up, whose charged sums are
	// kept apart (accountState.UsedUp).
	usedUp map[uint64]Allocation
	// usedUpOf lists them per account, in id order.
	usedUpOf map[string][]uint64
	// liens and charges count those the journal made (full audits).
	liens, charges, maxLien, maxCharge uint64
	progress                           func(entries uint64)
	// now is the audit's time, or the last entry's if later (a clock set
	// back): the next start the index by start must have is the first
	// after it (Tx.NextStart, asked at or after the last change).
	now time.Time
}

func newAuditor(tx Tx, rep *AuditReport) *auditor {
	return &auditor{tx: tx, rep: rep, from: 1, allocs: map[uint64]Allocation{}, nodes: map[string]Node{},
		users: map[string]User{}, machines: map[string]Machine{}, records: map[string]Record{},
		active: map[uint64]Lien{}, refunded: map[uint64]Charge{}, charged: map[string]ByProject{},
		indexed: map[string]*seqDigest{}, jobIndex: newJobIndexSum()}
}

func (a *auditor) problem(format string, args ...any) {
	if len(a.rep.Problems) < maxProblems {
		a.rep.Problems = append(a.rep.Problems, fmt.Sprintf(format, args...))
	}
}

// start sets where the replay begins: at the first entry the bank keeps
// (1, or after its archive's boundary, with the state the boundary
// holds), or after the last clean audit's checkpoint, with the state as
// it stood there.
func (a *auditor) start(full bool) error {
	a.full = true
	b, archived, err := boundaryOf(a.tx)
	if err != nil {
		return err
	}
	if !full {
		r, ok, err := a.tx.Record(auditKind, auditKey)
		if err != nil {
			return err
		}
		if ok {
			var cp auditCheckpoint
			if err := json.Unmarshal(r.Value, &cp); err != nil {
				a.problem("audit checkpoint: %v (run ingot audit --full)", err)
			} else if resumed, err := a.resumeAt(cp, b.Seq); err != nil || resumed {
				a.rep.From, a.rep.Full = a.from, a.full
				return err
			}
		}
	}
	if archived {
		a.resume(b.State)
	}
	a.rep.From, a.rep.Full = a.from, a.full
	return nil
}

// resumeAt starts an incremental audit after checkpoint cp if it is where
// the last clean audit ended, after the bank's boundary (after).
func (a *auditor) resumeAt(cp auditCheckpoint, after uint64) (bool, error) {
	if cp.Seq <= after {
		return false, nil
	}
	se, ok, err := a.tx.Entry(cp.Seq)
	if err != nil {
		return false, err
	}
	if !ok || hex.EncodeToString(se.Hash[:]) != cp.Hash || sha256.Sum256(se.Body) != se.Hash {
		a.problem("journal: entry %d, where the last clean audit ended, is not the one it checked: the journal is replayed from the start", cp.Seq)
		return false, nil
	}
	a.resume(cp)
	a.full = false
	return true, nil
}

// resume starts the replay after cp, from the state it holds: a
// checkpoint, or the boundary of an archive (whose last entry is not in
// the bank: the first the bank keeps must name its hash).
func (a *auditor) resume(cp auditCheckpoint) {
	a.from = cp.Seq + 1
	a.prev, a.prevHash = Entry{Seq: cp.Seq, Time: cp.Time}, cp.Hash
	a.settings = cp.Settings
	for _, al := range cp.Allocations {
		a.allocs[al.ID] = al
	}
	keyed(a.nodes, cp.Nodes, func(n Node) string { return n.Name })
	keyed(a.users, cp.Users, func(u User) string { return u.Name })
	keyed(a.machines, cp.Machines, func(m Machine) string { return m.Name })
	if cp.Charged != nil {
		a.charged = cp.Charged
	}
	keyed(a.records, cp.Records, func(r Record) string { return r.Kind + "/" + r.Key })
	for _, l := range cp.Active {
		a.active[l.ID] = l
	}
	a.liens, a.charges, a.maxLien, a.maxCharge = cp.Liens, cp.Charges, cp.MaxLien, cp.MaxCharge
}

// checkpoint is the state the replay reached, for the next audit.
func (a *auditor) checkpoint() *auditCheckpoint {
	cp := &auditCheckpoint{Seq: a.prev.Seq, Hash: a.prevHash, Time: a.prev.Time, Settings: a.settings, Charged: a.charged,
		Liens: a.liens, Charges: a.charges, MaxLien: a.maxLien, MaxCharge: a.maxCharge}
	for _, id := range slices.Sorted(maps.Keys(a.active)) {
		cp.Active = append(cp.Active, a.active[id])
	}
	for _, name := range slices.Sorted(maps.Keys(a.records)) {
		cp.Records = append(cp.Records, a.records[name])
	}
	for _, al := range a.allocs {
		cp.Allocations = append(cp.Allocations, al)
	}
	for _, n := range a.nodes {
		cp.Nodes = append(cp.Nodes, n)
	}
	for _, u := range a.users {
		cp.Users = append(cp.Users, u)
	}
	for _, m := range a.machines {
		cp.Machines = append(cp.Machines, m)
	}
	return cp
}

func keyed[T any](m map[string]T, list []T, key func(T) string) {
	for _, v := range list {
		m[key(v)] = v
	}
}

// decodedEntry is a stored entry with what the audit learns from its
// bytes alone: the hash of its bytes, its decoding (or why it does not
// decode) and the nodes it concerns.
type decodedEntry struct {
	se    StoredEntry
	sum   [sha256.Size]byte
	e     Entry
	err   error
	terms []string
}

func decodeForAudit(se StoredEntry) decodedEntry {
	d := decodedEntry{se: se, sum: sha256.Sum256(se.Body)}
	upTo := readWhole
	if d.sum == se.Hash {
		upTo = readHashed
	}
	if d.e, d.err = decodeEntry(se, upTo); d.err == nil {
		d.terms = IndexTerms(d.e)
	}
	return d
}

// replayAll replays the entries from a.from on, hashed and decoded ahead
// by the machine's other cores (package ahead): most of an audit's work.
func (a *auditor) replayAll() error {
	return ahead.Map(func(fn func(StoredEntry) (bool, error)) error { return a.tx.Entries(a.from, ^uint64(0), fn) },
		decodeForAudit, func(d decodedEntry) (bool, error) { return true, a.replay(d) })
}

// replay checks one stored entry against the chain and applies it.
func (a *auditor) replay(d decodedEntry) error {
	se, e := d.se, d.e
	a.rep.Entries++
	if a.progress != nil && a.rep.Entries%progressEntries == 0 {
		a.progress(a.rep.Entries)
	}
	hash := e.Hash // in hex, made with the decoding, off the replay's goroutine
	if d.err != nil {
		hash = hex.EncodeToString(se.Hash[:])
	}
	if d.sum != se.Hash {
		a.problem("journal: entry %d: stored hash %.12s… is not the hash of its stored bytes %.12s…", se.Seq, hash, hex.EncodeToString(d.sum[:]))
	}
	if d.err != nil {
		a.problem("journal: %v", d.err)
		a.prev, a.prevHash = Entry{Seq: se.Seq, Time: se.Time}, hash
		return nil
	}
	if e.Seq != a.prev.Seq+1 {
		a.problem("journal: entry %d follows entry %d", e.Seq, a.prev.Seq)
	}
	if e.PrevHash != a.prevHash {
		a.problem("journal: entry %d: previous hash %.12s… does not match entry %d's hash %.12s…", e.Seq, e.PrevHash, a.prev.Seq, a.prevHash)
	}
	if e.Time.Before(a.prev.Time) {
		a.problem("journal: entry %d at %s is earlier than entry %d", e.Seq, e.Time, a.prev.Seq)
	}
	if !e.Time.Equal(se.Time) {
		a.problem("journal: entry %d is stored with time %s but holds %s", e.Seq, se.Time, e.Time)
	}
	a.prev, a.prevHash = e, hash
	if err := a.checkRequestOf(e); err != nil {
		return err
	}
	for _, term := range d.terms {
		if IsJobTerm(term) {
			a.jobIndex.add(term, e.Seq)
		} else {
			addSeq(a.indexed, term, e.Seq)
		}
	}
	if e.Settings != nil {
		a.settings = e.Settings
	}
	if e.NodeState != nil {
		a.nodes[e.NodeState.Name] = *e.NodeState
	}
	if e.UserState != nil {
		a.users[e.UserState.Name] = *e.UserState
	}
	if e.Machine != nil {
		a.machines[e.Machine.Name] = *e.Machine
	}
	if e.Lien != nil {
		if err := a.lien(e); err != nil {
			return err
		}
	}
	if e.Charge != nil {
		if err := a.charge(e); err != nil {
			return err
		}
	}
	if e.Record != nil {
		for _, r := range e.Record.Writes() {
			a.records[r.Kind+"/"+r.Key] = r
		}
	}
	return a.moveAllocations(e)
}

// addSeq adds seq to the digest of node's sequence numbers in sums.
func addSeq(sums map[string]*seqDigest, node string, seq uint64) {
	d := sums[node]
	if d == nil {
		d = &seqDigest{h: sha256.New()}
		sums[node] = d
	}
	binary.BigEndian.PutUint64(d.block[d.n:], seq)
	if d.n += 8; d.n == len(d.block) {
		d.h.Write(d.block[:])
		d.n = 0
	}
}

// jobIndexSum sums, for a set of (term, seq) pairs, a hash of each under a
// seed chosen at random for the audit, and counts them: two sets with the
// same sum and count are the same set, unless the hash collides, which
// one who does not know the seed cannot arrange. A job's term and its
// entries' numbers are added as the replay meets them and as the index
// lists them (in another order), with no memory for each job.
type jobIndexSum struct {
	seed maphash.Seed
	sum  uint64
	n    uint64
}

func newJobIndexSum() jobIndexSum { return jobIndexSum{seed: maphash.MakeSeed()} }

// empty is a sum of nothing under the same seed.
func (j jobIndexSum) empty() jobIndexSum { return jobIndexSum{seed: j.seed} }

func (j *jobIndexSum) add(term string, seq uint64) {
	var h maphash.Hash
	h.SetSeed(j.seed)
	h.WriteString(term)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	h.Write(b[:])
	j.sum += h.Sum64()
	j.n++
}

// seqDigest is the SHA-256 of sequence numbers, 8 bytes each, given a
// block at a time: the audit adds a few for every entry.
type seqDigest struct {
	h     hash.Hash
	block [sha256.BlockSize]byte
	n     int
}

// sum is the digest of the numbers added, nil for none (d nil).
func (d *seqDigest) sum() []byte {
	if d == nil {
		return nil
	}
	d.h.Write(d.block[:d.n])
	d.n = 0
	return d.h.Sum(nil)
}

// checkNodeIndex compares, for each node (and kind), the entries of the
// replayed range that the index lists under it (what journal --node and
// statements read) with those the journal says concern it; and, in a full
// audit, what it lists under every job with the journal's jobs.
func (a *auditor) checkNodeIndex() error {
	if a.full {
		listed := a.jobIndex.empty()
		err := a.tx.TermSeqs(jobTermPrefix, func(term string, seq uint64) (bool, error) {
			listed.add(term, seq)
			return true, nil
		})
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err
		}
		if err != nil || listed != a.jobIndex {
			a.problem("journal index: the entries listed under jobs (%d) are not those of the journal's jobs (%d)", listed.n, a.jobIndex.n)
		}
	}
	names := slices.Sorted(maps.Keys(a.nodes))
	for name := range a.indexed {
		if _, ok := a.nodes[name]; !ok {
			names = append(names, name)
		}
	}
	listed := map[string]*seqDigest{}
	for _, name := range names {
		err := a.tx.NodeSeqs(name, a.from, a.prev.Seq, func(seq uint64) (bool, error) {
			addSeq(listed, name, seq)
			return true, nil
		})
		if errors.Is(err, ErrCorrupt) {
			a.problem("journal index: %v", err)
			continue
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(listed[name].sum(), a.indexed[name].sum()) {
			a.problem("journal index: the entries listed under %s from entry %d on are not those of the journal that concern it", name, a.from)
		}
	}
	return nil
}

// lien checks the lien e carries: its holds, and, unless it is still
// active, the stored lien (a finished lien changes no more).
func (a *auditor) lien(e Entry) error {
	l := *e.Lien
	if sum := sumHolds(l.Holds); !sum.Equal(l.Amount) {
		a.problem("journal: entry %d: lien %d holds %s in all but its amount is %s", e.Seq, l.ID, sum, l.Amount)
	}
	if l.ID > a.maxLien {
		a.maxLien, a.liens = l.ID, a.liens+1
	}
	if l.State == LienActive {
		a.active[l.ID] = l
		return nil
	}
	delete(a.active, l.ID)
	if ref, _, err := a.carried("lien", l.ID, e.Seq, Carriers.LienCarrier, func(c Entry) bool { return c.Lien != nil && c.Lien.ID == l.ID }); err != nil || ref {
		return err
	}
	stored, ok, err := a.tx.Lien(l.ID)
	if err != nil {
		return err
	}
	a.compare("lien", fmt.Sprint(l.ID), l, stored, ok)
	return nil
}

// carried checks a lien or charge that entry seq carries, if the store
// keeps it as a reference to an entry (ref; carrier reads which), with
// checkCarrier.
func (a *auditor) carried(what string, id, seq uint64, carrier func(Carriers, uint64) (uint64, bool, error), carries func(Entry) bool) (ref, later bool, err error) {
	carriers, ok := a.tx.(Carriers)
	if !ok {
		return false, false, nil
	}
	at, ref, err := carrier(carriers, id)
	if err != nil || !ref {
		return false, false, err
	}
	later, err = a.checkCarrier(what, id, at, seq, carries)
	return true, later, err
}

// checkCarrier checks that a lien or charge the journal carries in entry
// seq, and that the store keeps as a reference to entry carrier, is kept
// as this entry's, or as that of a later entry that carries it too (later
// is then true: the replay checks that entry in turn). A record kept so
// is the entry's by construction: there is no second copy to compare.
func (a *auditor) checkCarrier(what string, id, carrier, seq uint64, carries func(Entry) bool) (later bool, err error) {
	if carrier == seq {
		return false, nil
	}
	if carrier > seq {
		e, found, err := ReadEntry(a.tx, carrier)
		if errors.Is(err, ErrCorrupt) || (err == nil && found && carries(e)) {
			return true, nil // a damaged entry is reported where the replay meets it
		}
		if err != nil {
			return false, err
		}
	}
	a.problem("%s %d is stored as the one journal entry %d carries, but entry %d carries it last", what, id, carrier, seq)
	return false, nil
}

// charge checks the charge e carries and adds what it took to the
// account's sums; a charge that was refunded later is compared at the
// end, as the journal last has it.
func (a *auditor) charge(e Entry) error {
	c := *e.Charge
	if sum := sumHolds(c.Debits); !sum.Equal(c.Amount) {
		a.problem("journal: entry %d: charge %d debits %s in all but its amount is %s", e.Seq, c.ID, sum, c.Amount)
	}
	if c.ID > a.maxCharge {
		a.maxCharge, a.charges = c.ID, a.charges+1
	}
	addCharged(a.charged, e)
	if _, later := a.refunded[c.ID]; later || !c.Refunded.IsZero() {
		a.refunded[c.ID] = c
		return nil
	}
	ref, later, err := a.carried("charge", c.ID, e.Seq, Carriers.ChargeCarrier, func(x Entry) bool { return x.Charge != nil && x.Charge.ID == c.ID })
	if later {
		a.refunded[c.ID] = c // refunded after this entry: compared at the end
	}
	if err != nil || ref {
		return err
	}
	stored, ok, err := a.tx.Charge(c.ID)
	if err != nil {
		return err
	}
	if ok && !stored.Refunded.IsZero() {
		a.refunded[c.ID] = c // refunded after this entry: compared at the end
		return nil
	}
	a.compare("charge", fmt.Sprint(c.ID), c, stored, ok)
	return nil
}

// addCharged adds to its account's sums what the charge entry e carries
// took, or, for a refund, gave back.
func addCharged(sums map[string]ByProject, e Entry) {
	c := e.Charge
	if sums[c.Account] == nil {
		sums[c.Account] = ByProject{}
	}
	switch e.Kind {
	case KindRefund:
		for _, d := range e.Deltas {
			sums[c.Account].Add(c.Project, d.Allocation, d.Amount.Neg())
		}
	default:
		for _, h := range c.Debits {
			sums[c.Account].Add(c.Project, h.Allocation, h.Amount)
		}
	}
}

// moveAllocations applies e's terms and deltas and checks the history
// kept after e of each allocation it touched.
func (a *auditor) moveAllocations(e Entry) error {
	touched := map[uint64]bool{}
	for _, t := range e.Terms {
		al := a.allocs[t.ID]
		al.AllocationTerms = t
		a.allocs[t.ID] = al
		touched[t.ID] = true
	}
	for _, d := range e.Deltas {
		al, ok := a.allocs[d.Allocation]
		if !ok {
			a.problem("journal: entry %d changes allocation %d, which no earlier entry created", e.Seq, d.Allocation)
			continue
		}
		if d.Account != al.Account {
			a.problem("journal: entry %d names account %s for allocation %d of %s", e.Seq, d.Account, d.Allocation, al.Account)
		}
		al.Amount = al.Amount.Add(d.Amount)
		al.Deposited = al.Deposited.Add(d.Deposited)
		a.allocs[d.Allocation] = al
		touched[d.Allocation] = true
	}
	for id := range touched {
		hist, ok, err := a.tx.AllocationAsOf(id, e.Seq)
		if err != nil {
			return err
		}
		if !ok {
			a.problem("history: allocation %d has no state recorded for entry %d", id, e.Seq)
		} else if diff := allocationDiff(a.allocs[id], hist); diff != "" {
			a.problem("history: allocation %d after entry %d: %s", id, e.Seq, diff)
		}
	}
	return nil
}

// compare checks a stored record (found says whether there is one)
// against the journal's, by their JSON (which sees past the several
// representations of a decimal or a time).
func (a *auditor) compare(what, name string, journaled, stored any, found bool) {
	switch {
	case !found:
		a.problem("%s %s was journaled but is not stored", what, name)
	case !sameJSON(journaled, stored):
		a.problem("%s %s: stored state differs from the journal's", what, name)
	}
}

// checkRequestOf checks the answer kept for the request that made entry
// e, if it is still kept, against the entry it names: one lookup an entry
// replayed, so that an incremental audit's cost follows what came after
// the checkpoint, not the history. A full audit reads every answer kept
// instead (checkRequests): a lookup for each entry of the history would
// cost more than reading the few answers kept for the retention period.
func (a *auditor) checkRequestOf(e Entry) error {
	if e.RequestID == "" || a.full {
		return nil
	}
	k := RequestKey{Client: e.Actor, ID: e.RequestID}
	rec, ok, err := a.tx.Request(k)
	if err != nil || !ok || rec.Seq < a.from {
		return err
	}
	named, found := e, true
	if rec.Seq != e.Seq {
		if named, found, err = ReadEntry(a.tx, rec.Seq); err != nil {
			a.problem("requests: %v", err)
			return nil
		}
	}
	if err := checkAnswer(k.Client, k.ID, rec, named, found); err != nil {
		a.problem("requests: %v", err)
	}
	return nil
}

// checkRequests checks, in a full audit, every answer kept for retries
// against the journal entry it names: an entry of its own request, which
// recorded the answer's hash. It also finds an answer no entry's request
// names.
func (a *auditor) checkRequests() error {
	return a.tx.Requests(func(k RequestKey, rec RequestRecord) (bool, error) {
		named, found, err := ReadEntry(a.tx, rec.Seq)
		if err != nil {
			a.problem("requests: %v", err)
			return true, nil
		}
		if err := checkAnswer(k.Client, k.ID, rec, named, found); err != nil {
			a.problem("requests: %v", err)
		}
		return true, nil
	})
}

// compareStored compares the replayed state with what is stored.
func (a *auditor) compareStored() error {
	stored, ok, err := a.tx.Settings()
	if err != nil {
		return err
	}
	if !ok || a.settings == nil || *a.settings != stored {
		a.problem("settings: stored %+v, journaled %+v", stored, a.settings)
	}
	if err := a.compareAllocations(); err != nil {
		return err
	}
	nodes, err := a.tx.Nodes()
	if err != nil {
		return err
	}
	a.rep.Nodes = len(nodes)
	users, err := a.tx.Users()
	if err != nil {
		return err
	}
	machines, err := a.tx.Machines()
	if err != nil {
		return err
	}
	compareAll(a, "node", nodes, a.nodes, func(n Node) string { return n.Name })
	compareAll(a, "user", users, a.users, func(u User) string { return u.Name })
	compareAll(a, "machine", machines, a.machines, func(m Machine) string { return m.Name })
	for _, n := range nodes {
		if n.IsAccount() {
			if err := a.compareAccount(n.Name); err != nil {
				return err
			}
		}
	}
	for id, l := range a.active {
		stored, ok, err := a.tx.Lien(id)
		if err != nil {
			return err
		}
		a.compare("lien", fmt.Sprint(id), l, stored, ok)
	}
	for id, c := range a.refunded {
		stored, ok, err := a.tx.Charge(id)
		if err != nil {
			return err
		}
		a.compare("charge", fmt.Sprint(id), c, stored, ok)
	}
	if err := a.compareRecords(); err != nil {
		return err
	}
	if a.full {
		return a.countLiensAndCharges()
	}
	return nil
}

// compareAllocations compares every stored allocation, and each
// account's allocation indexes, with the replayed ones.
func (a *auditor) compareAllocations() error {
	allocs, err := a.tx.Allocations()
	if err != nil {
		return err
	}
	a.rep.Allocations = len(allocs)
	byAccount := map[string][]uint64{}
	// The allocations of each account that had not ended by the last
	// entry: what the index by end must list from then on.
	last := a.prev.Time
	if a.now.Before(last) {
		a.now = last
	}
	liveAt, activeAt, usedUpAt, upcoming, nextStart := map[string][]uint64{}, map[string][]uint64{}, map[string][]uint64{}, map[string][]uint64{}, map[string]time.Time{}
	a.ended, a.usedUp, a.usedUpOf = map[uint64]bool{}, map[uint64]Allocation{}, map[string][]uint64{}
	for _, s := range allocs {
		byAccount[s.Account] = append(byAccount[s.Account], s.ID)
		switch {
		case s.ActiveAt(last) && s.UsedUp():
			usedUpAt[s.Account] = append(usedUpAt[s.Account], s.ID)
		case s.ActiveAt(last):
			activeAt[s.Account] = append(activeAt[s.Account], s.ID)
		}
		if s.UsedUp() {
			a.usedUp[s.ID] = s
			a.usedUpOf[s.Account] = append(a.usedUpOf[s.Account], s.ID)
		}
		if s.Start.After(a.now) {
			upcoming[s.Account] = append(upcoming[s.Account], s.ID)
			if next := nextStart[s.Account]; next.IsZero() || s.Start.Before(next) {
				nextStart[s.Account] = s.Start
			}
		}
		if s.End.IsZero() || s.End.After(last) {
			liveAt[s.Account] = append(liveAt[s.Account], s.ID)
		} else {
			a.ended[s.ID] = true
		}
		want, ok := a.allocs[s.ID]
		if !ok {
			a.problem("allocation %d of %s is stored but no journal entry created it", s.ID, s.Account)
			continue
		}
		if diff := allocationDiff(want, s); diff != "" {
			a.problem("allocation %d of %s: %s", s.ID, s.Account, diff)
		}
		if a.settings != nil && !s.Amount.Equal(s.Amount.Round(a.settings.Precision)) {
			a.problem("allocation %d: amount %s has more than %d decimal places", s.ID, s.Amount, a.settings.Precision)
		}
		delete(a.allocs, s.ID)
	}
	for id, al := range a.allocs {
		a.problem("allocation %d of %s was journaled but is not stored", id, al.Account)
	}
	for account, want := range byAccount {
		listed, err := a.tx.AccountAllocations(account)
		if err != nil {
			return err
		}
		got := make([]uint64, len(listed))
		for i, al := range listed {
			got[i] = al.ID
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			a.problem("account %s: its allocation index lists %v, its allocations are %v", account, got, want)
		}
		// The index by end: from the start of time it lists every
		// allocation, from the last entry those not ended.
		for _, c := range []struct {
			at   time.Time
			want []uint64
		}{{time.Time{}, want}, {last, liveAt[account]}} {
			live, err := a.tx.LiveAllocations(account, c.at)
			if err != nil {
				return err
			}
			got := make([]uint64, len(live))
			for i, al := range live {
				got[i] = al.ID
			}
			if !slices.Equal(got, c.want) && (len(got) > 0 || len(c.want) > 0) {
				a.problem("account %s: its index by end lists %v as not ended by %s, its allocations are %v", account, got, c.at.Format(time.RFC3339Nano), c.want)
			}
		}
		// The index by start: those active by the last entry, apart
		// from those used up, and the next start after the audit's time.
		for _, c := range []struct {
			what string
			list func(string, time.Time) ([]Allocation, error)
			want []uint64
		}{
			{"active", a.tx.ActiveAllocations, activeAt[account]},
			{"used up", func(account string, t time.Time) ([]Allocation, error) { return a.tx.UsedUpAllocations(account, t, -1) }, usedUpAt[account]},
		} {
			listed, err := c.list(account, last)
			if err != nil {
				return err
			}
			got = got[:0]
			for _, al := range listed {
				got = append(got, al.ID)
			}
			if !slices.Equal(got, c.want) {
				a.problem("account %s: its indexes list %v as %s at %s, its allocations are %v", account, got, c.what, last.Format(time.RFC3339Nano), c.want)
			}
		}
		next, ok, err := a.tx.NextStart(account, a.now)
		if err != nil {
			return err
		}
		if want := nextStart[account]; ok != !want.IsZero() || !next.Equal(want) {
			a.problem("account %s: its index by start has the next start after %s at %s, its allocations at %s", account,
				a.now.Format(time.RFC3339Nano), next.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
		later, err := a.tx.UpcomingAllocations(account, a.now, -1)
		if err != nil {
			return err
		}
		got = got[:0]
		for _, al := range later {
			got = append(got, al.ID)
		}
		if slices.Sort(got); !slices.Equal(got, upcoming[account]) {
			a.problem("account %s: its index by start lists %v as starting after %s, its allocations are %v", account, got,
				a.now.Format(time.RFC3339Nano), upcoming[account])
		}
	}
	return nil
}

// compareAccount checks the account's active-lien index and its running
// sums: what its active liens hold, and what the journal says its charges
// took.
func (a *auditor) compareAccount(account string) error {
	indexed, err := a.tx.ActiveLiens(account)
	if err != nil {
		return err
	}
	reserved := ByProject{}
	var got []uint64
	for _, l := range indexed {
		got = append(got, l.ID)
		if l.State != LienActive {
			a.problem("account %s: its active-lien index lists lien %d, which is %s", account, l.ID, l.State)
		}
		for _, h := range l.Holds {
			reserved.Add(l.Project, h.Allocation, h.Amount)
		}
	}
	for id, l := range a.active {
		if l.Account == account && !slices.Contains(got, id) {
			a.problem("account %s: its active-lien index lacks lien %d, active in the journal", account, id)
		}
	}
	if a.full {
		var want []uint64
		for id, l := range a.active {
			if l.Account == account {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			a.problem("account %s: its active-lien index lists %v, the journal's active liens are %v", account, got, want)
		}
	}
	st, err := readAccountState(a.tx, account)
	if err != nil {
		a.problem("account %s: %v", account, err)
		return nil
	}
	charged := a.charged[account]
	if charged == nil {
		charged = ByProject{}
	}
	charged.prune()
	for _, c := range []struct {
		what      string
		got, want ByProject
		by        string
	}{{"reserved", st.Reserved, reserved, "its active liens hold"}, {"charged", st.Charged, charged, "the journal says its charges took"}} {
		for _, project := range projectKeys(c.got, c.want) {
			for id := range mergeKeys(c.got[project], c.want[project]) {
				_, stored := c.got[project][id]
				if c.what == "charged" && !stored && a.ended[id] {
					continue // dropped once the allocation ended (Writer.dropEnded)
				}
				if _, usedUp := a.usedUp[id]; c.what == "charged" && usedUp {
					if stored {
						a.problem("account %s: allocation %d is used up, yet its charged sum of %s is kept with the others'", account, id, project)
					}
					continue // kept apart: compareUsedUp
				}
				if !c.got[project][id].Equal(c.want[project][id]) {
					a.problem("account %s: the %s sum of %s on allocation %d is %s, %s %s", account, c.what, project, id, c.got[project][id], c.by, c.want[project][id])
				}
			}
		}
	}
	return a.compareUsedUp(account, st, charged)
}

// compareUsedUp checks what the account's running sums keep apart of its
// used-up allocations against what the journal says their charges took
// (charged): each one's record, and the sums per end, of those not ended
// by the last entry (those that have ended are never read again).
func (a *auditor) compareUsedUp(account string, st *accountState, charged ByProject) error {
	want := map[string]map[string]decimal.Decimal{} // per end (RFC 3339), per project
	endOf := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	for _, id := range a.usedUpOf[account] {
		if a.ended[id] {
			// Never read again, as its charged sums (Writer.dropEnded):
			// one ended before it was used up has only what was charged
			// after its end set aside, or nothing.
			continue
		}
		al := a.usedUp[id]
		took := map[string]decimal.Decimal{}
		for project, sums := range charged {
			if v, ok := sums[id]; ok && !v.IsZero() {
				took[project] = v
			}
		}
		s, err := st.spentOf(a.tx, id)
		if err != nil {
			a.problem("account %s: %v", account, err)
			continue
		}
		var kept map[string]decimal.Decimal
		if s != nil {
			kept = s.Charged
		}
		if !sameSums(kept, took) {
			a.problem("account %s: the record of used-up allocation %d holds %v, the journal says its charges took %v", account, id, kept, took)
		}
		if want[endOf(al.End)] == nil {
			want[endOf(al.End)] = map[string]decimal.Decimal{}
		}
		for project, v := range took {
			want[endOf(al.End)][project] = want[endOf(al.End)][project].Add(v)
		}
	}
	last := a.prev.Time
	stored := map[string]bool{}
	for _, g := range st.UsedUp {
		stored[endOf(g.End)] = true
		if !g.End.IsZero() && !g.End.After(last) {
			continue // ended: dropped at the account's next change, never read (usedUpAt)
		}
		if !sameSums(g.Charged, want[endOf(g.End)]) {
			a.problem("account %s: the sums of its used-up allocations ending %s are %v, the journal says their charges took %v", account, endOf(g.End), g.Charged, want[endOf(g.End)])
		}
	}
	for _, g := range slices.Sorted(maps.Keys(want)) {
		end, _ := time.Parse(time.RFC3339Nano, g)
		if !stored[g] && len(want[g]) > 0 && (end.IsZero() || end.After(last)) {
			a.problem("account %s: its running sums lack those of its used-up allocations ending %s: %v", account, g, want[g])
		}
	}
	if !a.full {
		return nil
	}
	records, err := a.tx.Records(usedUpKind)
	if err != nil {
		return err
	}
	for _, r := range records {
		var s spentSums
		if err := json.Unmarshal(r.Value, &s); err != nil {
			a.problem("record %s/%s: %v", usedUpKind, r.Key, err)
			continue
		}
		if s.Account != account {
			continue
		}
		if id, err := strconv.ParseUint(r.Key, 10, 64); err != nil || r.Key != usedUpKey(id) {
			a.problem("record %s/%s: not the key of an allocation", usedUpKind, r.Key)
		} else if _, ok := a.usedUp[id]; !ok {
			a.problem("account %s: allocation %d is not used up, yet a record keeps its charged sums apart", account, id)
		}
	}
	return nil
}

// sameSums reports whether two sums per project are equal, a missing
// one being zero.
func sameSums(a, b map[string]decimal.Decimal) bool {
	for k, v := range a {
		if !v.Equal(b[k]) {
			return false
		}
	}
	for k, v := range b {
		if !v.Equal(a[k]) {
			return false
		}
	}
	return true
}

// compareRecords compares the records journaled since the audit's start
// with the stored ones; a full audit also looks for stored records of
// those kinds that no entry made.
func (a *auditor) compareRecords() error {
	for name, r := range a.records {
		stored, ok, err := a.tx.Record(r.Kind, r.Key)
		if err != nil {
			return err
		}
		switch {
		case r.Deleted && ok:
			a.problem("record %s was deleted by the journal but is stored", name)
		case !r.Deleted:
			a.compare("record", name, r, stored, ok)
		}
	}
	if !a.full {
		return nil
	}
	var kinds []string
	for _, r := range a.records {
		if !slices.Contains(kinds, r.Kind) {
			kinds = append(kinds, r.Kind)
		}
	}
	for _, kind := range kinds {
		rs, err := a.tx.Records(kind)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if _, ok := a.records[r.Kind+"/"+r.Key]; !ok {
				a.problem("record %s/%s is stored but no journal entry made it", r.Kind, r.Key)
			}
		}
	}
	return nil
}

// countLiensAndCharges checks that the store holds the liens and charges
// the journal made, and no others.
func (a *auditor) countLiensAndCharges() error {
	liens, err := a.tx.LienCount()
	if err != nil {
		return err
	}
	charges, err := a.tx.ChargeCount()
	if err != nil {
		return err
	}
	if liens != a.liens {
		a.problem("liens: %d are stored, the journal made %d", liens, a.liens)
	}
	if charges != a.charges {
		a.problem("charges: %d are stored, the journal made %d", charges, a.charges)
	}
	return nil
}

func projectKeys(a, b ByProject) []string {
	var keys []string
	for _, m := range []ByProject{a, b} {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func mergeKeys(a, b map[uint64]decimal.Decimal) map[uint64]bool {
	keys := map[uint64]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

func sumHolds(holds []Hold) decimal.Decimal {
	sum := decimal.Zero
	for _, h := range holds {
		sum = sum.Add(h.Amount)
	}
	return sum
}

// compareAll checks stored records against the replayed ones.
func compareAll[T any](a *auditor, what string, stored []T, replayed map[string]T, name func(T) string) {
	seen := map[string]bool{}
	for _, s := range stored {
		n := name(s)
		seen[n] = true
		want, ok := replayed[n]
		if !ok {
			a.problem("%s %s is stored but no journal entry made it", what, n)
			continue
		}
		a.compare(what, n, want, s, true)
	}
	for n := range replayed {
		if !seen[n] {
			a.problem("%s %s was journaled but is not stored", what, n)
		}
	}
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// allocationDiff describes how got differs from want ("" if not at all).
func allocationDiff(want, got Allocation) string {
	switch {
	case !got.Amount.Equal(want.Amount):
		return fmt.Sprintf("amount is %s, the journal says %s", got.Amount, want.Amount)
	case !got.Deposited.Equal(want.Deposited):
		return fmt.Sprintf("deposited is %s, the journal says %s", got.Deposited, want.Deposited)
	case !sameTerms(got.AllocationTerms, want.AllocationTerms):
		return fmt.Sprintf("terms are %+v, the journal says %+v", got.AllocationTerms, want.AllocationTerms)
	}
	return ""
}

// sameTerms says whether two terms are equal as values (a decimal and a
// time have several representations of one value).
func sameTerms(a, b AllocationTerms) bool {
	return a.ID == b.ID && a.Account == b.Account && a.CreditLimit.Equal(b.CreditLimit) && a.Start.Equal(b.Start) &&
		a.End.Equal(b.End) && a.Machine == b.Machine && a.Description == b.Description && a.Created.Equal(b.Created)
}
