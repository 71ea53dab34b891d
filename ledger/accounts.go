package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// accountStateKind is the kind of the records in which the ledger keeps,
// per account, what every lien and charge would otherwise have to sum
// from all the account's liens and charges. An engine stores them like any
// other record; they are not journaled (the journal's liens and charges
// say the same) and the audit recomputes them.
const accountStateKind = "ledger.account"

// accountState is an account's running sums and version.
type accountState struct {
	// Version is the version the newest journal entry that changed the
	// account gave it (newVersion): what the plan cache checks.
	Version string `json:"version"`
	// Reserved sums the holds of the account's active liens, per project
	// and allocation, whether or not they have reached their expiry.
	Reserved ByProject `json:"reserved,omitempty"`
	// Charged sums what the account's charges took, less refunds, of
	// the allocations that are not used up (UsedUp has the others').
	Charged ByProject `json:"charged,omitempty"`
	// UsedUp sums what the charges took of the account's used-up
	// allocations (Allocation.UsedUp), per end and project, in end order:
	// it counts in the HFS pool until the allocations end, and keeping
	// it per allocation would make every change read and write a sum for
	// each. Each allocation's part is in its own record (usedUpKind).
	UsedUp []usedUpSums `json:"used_up,omitempty"`
	// Apart says that Charged holds no sum of a used-up allocation; the
	// state of a bank made before they were kept apart has them there,
	// and readAccountState moves them.
	Apart bool `json:"apart,omitempty"`
	// spent are the usedUpKind records this change set (nil: removed),
	// written with the state.
	spent map[uint64]*spentSums
}

func readAccountState(tx Tx, account string) (*accountState, error) {
	st := &accountState{Reserved: ByProject{}, Charged: ByProject{}, Apart: true}
	r, ok, err := tx.Record(accountStateKind, account)
	if err != nil || !ok {
		return st, err
	}
	st.Apart = false
	if err := json.Unmarshal(r.Value, st); err != nil {
		return nil, fmt.Errorf("%w: running sums of account %s: %v", ErrCorrupt, account, err)
	}
	if st.Reserved == nil {
		st.Reserved = ByProject{}
	}
	if st.Charged == nil {
		st.Charged = ByProject{}
	}
	if !st.Apart {
		if err := st.setApart(tx); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func writeAccountState(tx Tx, account string, st *accountState) error {
	st.Reserved.prune()
	st.Charged.prune()
	if err := st.writeSpent(tx); err != nil {
		return err
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("ledger: encode running sums of account %s: %w", account, err)
	}
	return tx.PutRecord(Record{Kind: accountStateKind, Key: account, Value: raw})
}

// prune drops zero sums, so that the record holds what is in use.
func (b ByProject) prune() {
	for project, m := range b {
		for id, v := range m {
			if v.IsZero() {
				delete(m, id)
			}
		}
		if len(m) == 0 {
			delete(b, project)
		}
	}
}

// accountVersion is account's version as this change sees it, read
// without decoding its sums (all a plan cache hit needs of them).
func (w *Writer) accountVersion(account string) (string, error) {
	if st := w.accounts[account]; st != nil {
		return st.Version, nil
	}
	r, ok, err := w.tx.Record(accountStateKind, account)
	if err != nil || !ok {
		return "", err
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return "", fmt.Errorf("%w: running sums of account %s: %v", ErrCorrupt, account, err)
	}
	return v.Version, nil
}

// account is the state of account as this change sees it.
func (w *Writer) account(account string) (*accountState, error) {
	if st := w.accounts[account]; st != nil {
		return st, nil
	}
	st, err := readAccountState(w.tx, account)
	if err != nil {
		return nil, err
	}
	if w.accounts == nil {
		w.accounts = map[string]*accountState{}
	}
	w.accounts[account] = st
	return st, nil
}

// moveAccount brings account's sums and version past entry e, which
// replaced oldLien and oldCharge (nil if new) and stored changed (revived:
// those of them that were used up before), and keeps the plan cache in
// step.
func (w *Writer) moveAccount(account string, e Entry, oldLien *Lien, oldCharge *Charge, changed []Allocation, revived map[uint64]bool) error {
	st, err := w.account(account)
	if err != nil {
		return err
	}
	addHolds := func(sums ByProject, project string, holds []Hold, sign int64) {
		for _, h := range holds {
			sums.Add(project, h.Allocation, h.Amount.Mul(decimal.NewFromInt(sign)))
		}
	}
	if l := oldLien; l != nil && l.Account == account && l.State == LienActive {
		addHolds(st.Reserved, l.Project, l.Holds, -1)
	}
	if l := e.Lien; l != nil && l.Account == account && l.State == LienActive {
		addHolds(st.Reserved, l.Project, l.Holds, 1)
	}
	if c := oldCharge; c != nil && c.Account == account {
		addHolds(st.Charged, c.Project, c.NetDebits(), -1)
	}
	if c := e.Charge; c != nil && c.Account == account {
		addHolds(st.Charged, c.Project, c.NetDebits(), 1)
	}
	for _, a := range changed {
		var err error
		switch {
		case a.Account != account:
		case a.UsedUp():
			err = st.setAside(w.tx, a)
		case revived[a.ID]:
			err = st.bringBack(w.tx, a)
		}
		if err != nil {
			return err
		}
	}
	prev := st.Version
	st.Version = newVersion()
	if w.plans != nil {
		w.plans.afterAppend(account, prev, st.Version, e, oldLien, oldCharge, w.now)
	}
	if err := w.dropEnded(account, st); err != nil {
		return err
	}
	return writeAccountState(w.tx, account, st)
}

// activeAllocations are the account's allocations active now that it may
// take from or must count (activeAndHeld), whose ids the change keeps for
// dropEnded.
func (w *Writer) activeAllocations(account string) ([]Allocation, error) {
	st, err := w.account(account)
	if err != nil {
		return nil, err
	}
	live, err := activeAndHeld(w.tx, st, account, w.now)
	if err != nil {
		return nil, err
	}
	ids := make(map[uint64]bool, len(live))
	for _, a := range live {
		ids[a.ID] = true
	}
	if w.live == nil {
		w.live = map[string]map[uint64]bool{}
	}
	w.live[account] = ids
	return live, nil
}

// dropEnded takes out of the account's charged sums those on allocations
// that have ended by now. Only the active allocations' count (in the
// pool, and in each project's demand), and an allocation that has ended
// never counts again (its end never changes): kept, they would make every
// change read and write a sum for each allocation the account ever had.
// What the charges took of them stays in the journal, which the audit
// sums; it finds a stored sum on an allocation that had ended by the
// journal's last entry either absent or right.
func (w *Writer) dropEnded(account string, st *accountState) error {
	st.dropEndedUsedUp(w.now)
	if len(st.Charged) == 0 {
		return nil
	}
	live := w.live[account]
	if live == nil {
		if _, err := w.activeAllocations(account); err != nil {
			return err
		}
		live = w.live[account]
	}
	ended := map[uint64]bool{}
	for _, sums := range st.Charged {
		for id := range sums {
			if live[id] || ended[id] {
				continue
			}
			// Not active when the change read the list: ended, or made
			// since by this change (a charge takes from none that has not
			// started).
			a, ok, err := w.tx.Allocation(id)
			if err != nil {
				return err
			}
			if ok && !a.End.IsZero() && !a.End.After(w.now) {
				ended[id] = true
			}
		}
	}
	for project, sums := range st.Charged {
		for id := range ended {
			delete(sums, id)
		}
		if len(sums) == 0 {
			delete(st.Charged, project)
		}
	}
	return nil
}

// expiredHolds are the holds of the account's active liens that have
// reached their expiry by t: the running sums count them, balances do not.
func expiredHolds(tx Tx, account string, t time.Time) ([]Lien, error) {
	return tx.ActiveLiensExpiring(account, time.Time{}, t, 0)
}

// reservedByProject sums, per project and allocation, what the account's
// liens hold at time t, leaving out what own holds (nil: nothing to leave
// out). st is the account's state.
func reservedByProject(tx Tx, st *accountState, account string, t time.Time, own *Lien) (ByProject, error) {
	reserved := ByProject{}
	return reserved, eachReserved(tx, st, account, t, own, reserved.Add)
}

// reservedAt is reservedByProject summed over the projects: what every
// lien's funds need, so summed directly.
func reservedAt(tx Tx, st *accountState, account string, t time.Time, own *Lien) (map[uint64]decimal.Decimal, error) {
	reserved := map[uint64]decimal.Decimal{}
	return reserved, eachReserved(tx, st, account, t, own, func(_ string, allocation uint64, amount decimal.Decimal) {
		reserved[allocation] = reserved[allocation].Add(amount)
	})
}

// eachReserved gives add what the account's liens hold at time t, per
// project and allocation: the running sums, less the holds of liens past
// their expiry and of own.
func eachReserved(tx Tx, st *accountState, account string, t time.Time, own *Lien, add func(project string, allocation uint64, amount decimal.Decimal)) error {
	for project, m := range st.Reserved {
		for id, v := range m {
			add(project, id, v)
		}
	}
	expired, err := expiredHolds(tx, account, t)
	if err != nil {
		return err
	}
	for _, l := range expired {
		for _, h := range l.Holds {
			add(l.Project, h.Allocation, h.Amount.Neg())
		}
	}
	if own != nil && own.HoldsAt(t) && own.Account == account {
		for _, h := range own.Holds {
			add(own.Project, h.Allocation, h.Amount.Neg())
		}
	}
	return nil
}

// nextExpiry is the earliest expiry after t and at or before until of the
// account's active liens.
func nextExpiry(tx Tx, account string, t, until time.Time) (time.Time, bool, error) {
	liens, err := tx.ActiveLiensExpiring(account, t, until, 1)
	if err != nil || len(liens) == 0 {
		return time.Time{}, false, err
	}
	return liens[0].Expires, true, nil
}

// RebuildAccountStates computes every account's running sums from the
// stored liens and charges and stores them: for an engine that upgrades a
// file made before the ledger kept them, and for a copy of a bank into
// another engine.
func RebuildAccountStates(tx Tx) error { return rebuildAccountStates(tx, nil) }

// rebuildAccountStates is RebuildAccountStates with what the charges took
// given (charged), if not nil, rather than summed from the stored ones: a
// bank that starts at an archive's boundary does not keep every charge
// its sums count.
func rebuildAccountStates(tx Tx, charged map[string]ByProject) error {
	states := map[string]*accountState{}
	state := func(account string) *accountState {
		if states[account] == nil {
			states[account] = &accountState{Version: newVersion(), Reserved: ByProject{}, Charged: ByProject{}, Apart: true}
		}
		return states[account]
	}
	nodes, err := tx.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.IsAccount() {
			state(n.Name)
		}
	}
	err = tx.Liens(func(l Lien) (bool, error) {
		if l.State == LienActive {
			for _, h := range l.Holds {
				state(l.Account).Reserved.Add(l.Project, h.Allocation, h.Amount)
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if charged != nil {
		for account, sums := range charged {
			state(account).Charged = sums
		}
	} else if err := tx.Charges(func(c Charge) (bool, error) {
		for _, h := range c.NetDebits() {
			state(c.Account).Charged.Add(c.Project, h.Allocation, h.Amount)
		}
		return true, nil
	}); err != nil {
		return err
	}
	for account, st := range states {
		if err := st.setApart(tx); err != nil {
			return err
		}
		if err := writeAccountState(tx, account, st); err != nil {
			return err
		}
	}
	return nil
}
