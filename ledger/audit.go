package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"
)

// AuditReport is what Audit found. The bank is sound iff Problems is empty.
type AuditReport struct {
	Entries     uint64   `json:"entries"`
	Allocations int      `json:"allocations"`
	Nodes       int      `json:"nodes"`
	Problems    []string `json:"problems"`
}

// maxProblems stops an audit of a badly damaged bank from listing every
// consequence of the first few problems.
const maxProblems = 100

// Audit checks the bank. It runs the engine's own check of its storage,
// then, in one consistent snapshot, replays the whole journal: it checks
// each entry's hash over the bytes stored and the hash chain, recomputes
// every allocation from the journaled deltas (checking the history kept
// for point-in-time queries after every entry), and compares the result,
// and every node, user, machine, lien, charge, record and running sum,
// with the stored state; each answer kept for retries is checked against
// the hash its journal entry carries.
func (l *Ledger) Audit(ctx context.Context) (AuditReport, error) {
	var rep AuditReport
	damaged, err := l.store.Check(ctx)
	if err != nil {
		return rep, err
	}
	err = l.store.View(ctx, func(tx Tx) error {
		rep = AuditReport{}
		for _, d := range damaged {
			rep.Problems = append(rep.Problems, "storage: "+d)
		}
		a := auditor{tx: tx, rep: &rep, allocs: map[uint64]Allocation{}, nodes: map[string]Node{},
			users: map[string]User{}, machines: map[string]Machine{}, liens: map[string]Lien{},
			charges: map[string]Charge{}, records: map[string]Record{}}
		if err := tx.Entries(1, ^uint64(0), a.replay); err != nil {
			return err
		}
		if err := a.compareStored(); err != nil {
			return err
		}
		return a.checkRequests()
	})
	return rep, err
}

type auditor struct {
	tx       Tx
	rep      *AuditReport
	prev     Entry
	prevHash string
	settings *Settings
	allocs   map[uint64]Allocation
	nodes    map[string]Node
	users    map[string]User
	machines map[string]Machine
	liens    map[string]Lien
	charges  map[string]Charge
	records  map[string]Record
}

func (a *auditor) problem(format string, args ...any) {
	if len(a.rep.Problems) < maxProblems {
		a.rep.Problems = append(a.rep.Problems, fmt.Sprintf(format, args...))
	}
}

// replay checks one stored entry against the chain and applies it.
func (a *auditor) replay(se StoredEntry) (bool, error) {
	a.rep.Entries++
	hash := hex.EncodeToString(se.Hash[:])
	if sum := sha256.Sum256(se.Body); sum != se.Hash {
		a.problem("journal: entry %d: stored hash %.12s… is not the hash of its stored bytes %.12s…", se.Seq, hash, hex.EncodeToString(sum[:]))
	}
	e, err := DecodeEntry(se)
	if err != nil {
		a.problem("journal: %v", err)
		a.prev, a.prevHash = Entry{Seq: se.Seq, Time: se.Time}, hash
		return true, nil
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
		a.liens[fmt.Sprint(e.Lien.ID)] = *e.Lien
		if sum := sumHolds(e.Lien.Holds); !sum.Equal(e.Lien.Amount) {
			a.problem("journal: entry %d: lien %d holds %s in all but its amount is %s", e.Seq, e.Lien.ID, sum, e.Lien.Amount)
		}
	}
	if e.Charge != nil {
		a.charges[fmt.Sprint(e.Charge.ID)] = *e.Charge
		if sum := sumHolds(e.Charge.Debits); !sum.Equal(e.Charge.Amount) {
			a.problem("journal: entry %d: charge %d debits %s in all but its amount is %s", e.Seq, e.Charge.ID, sum, e.Charge.Amount)
		}
	}
	if r := e.Record; r != nil {
		if r.Deleted {
			delete(a.records, r.Kind+"/"+r.Key)
		} else {
			a.records[r.Kind+"/"+r.Key] = *r
		}
	}
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
			return false, err
		}
		if !ok {
			a.problem("history: allocation %d has no state recorded for entry %d", id, e.Seq)
		} else if diff := allocationDiff(a.allocs[id], hist); diff != "" {
			a.problem("history: allocation %d after entry %d: %s", id, e.Seq, diff)
		}
	}
	return true, nil
}

// checkRequests checks every answer kept for retries against the
// journal entry it names.
func (a *auditor) checkRequests() error {
	return a.tx.Requests(func(k RequestKey, rec RequestRecord) (bool, error) {
		e, ok, err := ReadEntry(a.tx, rec.Seq)
		if err != nil {
			a.problem("requests: %v", err)
			return true, nil
		}
		if err := checkAnswer(k.Client, k.ID, rec, e, ok); err != nil {
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
	allocs, err := a.tx.Allocations()
	if err != nil {
		return err
	}
	a.rep.Allocations = len(allocs)
	byAccount := map[string][]uint64{}
	for _, s := range allocs {
		byAccount[s.Account] = append(byAccount[s.Account], s.ID)
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
	nodes, err := a.tx.Nodes()
	if err != nil {
		return err
	}
	a.rep.Nodes = len(nodes)
	for _, n := range nodes {
		if n.IsAccount() {
			if err := a.compareAccountIndex(n.Name, byAccount[n.Name]); err != nil {
				return err
			}
		}
	}
	users, err := a.tx.Users()
	if err != nil {
		return err
	}
	machines, err := a.tx.Machines()
	if err != nil {
		return err
	}
	liens, err := a.tx.Liens()
	if err != nil {
		return err
	}
	charges, err := a.tx.Charges()
	if err != nil {
		return err
	}
	var records []Record
	for _, n := range nodes {
		if !n.IsAccount() {
			continue
		}
		if err := a.compareActiveLiens(n.Name, liens); err != nil {
			return err
		}
		if err := a.compareSums(n.Name, liens, charges); err != nil {
			return err
		}
	}
	for _, kind := range recordKinds(a.records) {
		rs, err := a.tx.Records(kind)
		if err != nil {
			return err
		}
		records = append(records, rs...)
	}
	compareRecords(a, "lien", liens, a.liens, func(l Lien) string { return fmt.Sprint(l.ID) })
	compareRecords(a, "charge", charges, a.charges, func(c Charge) string { return fmt.Sprint(c.ID) })
	compareRecords(a, "record", records, a.records, func(r Record) string { return r.Kind + "/" + r.Key })
	compareRecords(a, "node", nodes, a.nodes, func(n Node) string { return n.Name })
	compareRecords(a, "user", users, a.users, func(u User) string { return u.Name })
	compareRecords(a, "machine", machines, a.machines, func(m Machine) string { return m.Name })
	return nil
}

func (a *auditor) compareAccountIndex(account string, want []uint64) error {
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
	return nil
}

// compareActiveLiens checks the account's active-lien index against the
// stored liens.
func (a *auditor) compareActiveLiens(account string, liens []Lien) error {
	indexed, err := a.tx.ActiveLiens(account)
	if err != nil {
		return err
	}
	var got, want []uint64
	for _, l := range indexed {
		got = append(got, l.ID)
	}
	for _, l := range liens {
		if l.Account == account && l.State == LienActive {
			want = append(want, l.ID)
		}
	}
	if !slices.Equal(got, want) {
		a.problem("account %s: its active-lien index lists %v, its active liens are %v", account, got, want)
	}
	return nil
}

// compareSums checks the account's running sums against its stored liens
// and charges.
func (a *auditor) compareSums(account string, liens []Lien, charges []Charge) error {
	st, err := readAccountState(a.tx, account)
	if err != nil {
		a.problem("account %s: %v", account, err)
		return nil
	}
	reserved, charged := sumsFromRecords(account, liens, charges)
	for _, c := range []struct {
		what      string
		got, want ByProject
	}{{"reserved", st.Reserved, reserved}, {"charged", st.Charged, charged}} {
		for _, project := range projectKeys(c.got, c.want) {
			for id := range mergeKeys(c.got[project], c.want[project]) {
				if !c.got[project][id].Equal(c.want[project][id]) {
					a.problem("account %s: the %s sum of %s on allocation %d is %s, its liens and charges say %s", account, c.what, project, id, c.got[project][id], c.want[project][id])
				}
			}
		}
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

// recordKinds lists the kinds of the replayed records; a stored record of a
// kind that was never journaled is not looked for.
func recordKinds(records map[string]Record) []string {
	var kinds []string
	for _, r := range records {
		if !slices.Contains(kinds, r.Kind) {
			kinds = append(kinds, r.Kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

func sumHolds(holds []Hold) decimal.Decimal {
	sum := decimal.Zero
	for _, h := range holds {
		sum = sum.Add(h.Amount)
	}
	return sum
}

// compareRecords checks stored records against the replayed ones, by their
// JSON form (the journal stores them that way).
func compareRecords[T any](a *auditor, what string, stored []T, replayed map[string]T, name func(T) string) {
	seen := map[string]bool{}
	for _, s := range stored {
		n := name(s)
		seen[n] = true
		want, ok := replayed[n]
		if !ok {
			a.problem("%s %s is stored but no journal entry made it", what, n)
			continue
		}
		if !sameJSON(want, s) {
			a.problem("%s %s: stored state differs from the journal's", what, n)
		}
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
	case normTerms(got.AllocationTerms) != normTerms(want.AllocationTerms):
		return fmt.Sprintf("terms are %+v, the journal says %+v", got.AllocationTerms, want.AllocationTerms)
	}
	return ""
}

// normTerms puts terms in a form where equal values compare equal
// (decimals and times have several representations).
func normTerms(t AllocationTerms) [7]string {
	return [7]string{fmt.Sprint(t.ID), t.Account, t.CreditLimit.String(), t.Start.UTC().String(), t.End.UTC().String(), t.Machine, t.Description + "|" + t.Created.UTC().String()}
}
