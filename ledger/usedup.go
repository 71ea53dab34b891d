package ledger

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// usedUpKind is the kind of the records that keep, for each allocation
// used up, what charges took of it per project: the detail of its share
// of accountState.UsedUp, moved back to Charged when the allocation is
// usable again. Like the running sums, they are not journaled and the
// audit recomputes them.
const usedUpKind = "ledger.used-up"

// usedUpKey is allocation id's key among the usedUpKind records.
func usedUpKey(id uint64) string { return fmt.Sprintf("%020d", id) }

// usedUpSums are what charges took of the account's used-up allocations
// that end at End (zero: never), per project.
type usedUpSums struct {
	End     time.Time                  `json:"end,omitzero"`
	Charged map[string]decimal.Decimal `json:"charged"`
}

// spentSums is a usedUpKind record: what charges took of one used-up
// allocation, per project.
type spentSums struct {
	Account string                     `json:"account"`
	End     time.Time                  `json:"end,omitzero"`
	Charged map[string]decimal.Decimal `json:"charged"`
}

// spentOf is the record of used-up allocation id as this change sees it,
// nil if there is none.
func (st *accountState) spentOf(tx Tx, id uint64) (*spentSums, error) {
	if s, ok := st.spent[id]; ok {
		return s, nil
	}
	r, ok, err := tx.Record(usedUpKind, usedUpKey(id))
	if err != nil || !ok {
		return nil, err
	}
	s := &spentSums{}
	if err := json.Unmarshal(r.Value, s); err != nil {
		return nil, fmt.Errorf("%w: the sums of used-up allocation %d: %v", ErrCorrupt, id, err)
	}
	if s.Charged == nil {
		s.Charged = map[string]decimal.Decimal{}
	}
	return s, nil
}

// keepSpent sets allocation id's record (nil: removes it), written with
// the state.
func (st *accountState) keepSpent(id uint64, s *spentSums) {
	if st.spent == nil {
		st.spent = map[uint64]*spentSums{}
	}
	st.spent[id] = s
}

// addUsedUp adds v to project's sum in the group of end; a group that is
// not there (it ended and was dropped) is made only for what is added.
func (st *accountState) addUsedUp(end time.Time, project string, v decimal.Decimal) {
	i := slices.IndexFunc(st.UsedUp, func(g usedUpSums) bool { return g.End.Equal(end) })
	if i < 0 {
		if !v.IsPositive() {
			return
		}
		st.UsedUp = append(st.UsedUp, usedUpSums{End: end, Charged: map[string]decimal.Decimal{}})
		slices.SortFunc(st.UsedUp, func(a, b usedUpSums) int { return compareEnds(a.End, b.End) })
		i = slices.IndexFunc(st.UsedUp, func(g usedUpSums) bool { return g.End.Equal(end) })
	}
	g := st.UsedUp[i]
	if sum := g.Charged[project].Add(v); sum.IsZero() {
		delete(g.Charged, project)
	} else {
		g.Charged[project] = sum
	}
	if len(g.Charged) == 0 {
		st.UsedUp = slices.Delete(st.UsedUp, i, i+1)
	}
}

// setAside moves what Charged holds of allocation a, used up, to its
// record and to the sums of its end, so that no change reads or writes a
// sum of it again until it is usable or ended.
func (st *accountState) setAside(tx Tx, a Allocation) error {
	var moved map[string]decimal.Decimal
	for project, sums := range st.Charged {
		if v, ok := sums[a.ID]; ok {
			if moved == nil {
				moved = map[string]decimal.Decimal{}
			}
			moved[project] = v
			delete(sums, a.ID)
		}
	}
	if moved == nil {
		return nil
	}
	s, err := st.spentOf(tx, a.ID)
	if err != nil {
		return err
	}
	if s == nil {
		s = &spentSums{Account: a.Account, End: a.End, Charged: map[string]decimal.Decimal{}}
	}
	for project, v := range moved {
		s.Charged[project] = s.Charged[project].Add(v)
		if s.Charged[project].IsZero() {
			delete(s.Charged, project)
		}
		st.addUsedUp(a.End, project, v)
	}
	st.keepSpent(a.ID, s)
	return nil
}

// bringBack moves the sums of allocation a, usable again, from its record
// back to Charged.
func (st *accountState) bringBack(tx Tx, a Allocation) error {
	s, err := st.spentOf(tx, a.ID)
	if err != nil || s == nil {
		return err
	}
	for project, v := range s.Charged {
		st.Charged.Add(project, a.ID, v)
		st.addUsedUp(a.End, project, v.Neg())
	}
	st.keepSpent(a.ID, nil)
	return nil
}

// setApart moves the sums of every used-up allocation out of Charged: a
// state written before they were kept apart, or rebuilt, has them there.
func (st *accountState) setApart(tx Tx) error {
	var ids []uint64
	for _, sums := range st.Charged {
		for id := range sums {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a, ok, err := tx.Allocation(id)
		if err != nil {
			return err
		}
		if ok && a.UsedUp() {
			if err := st.setAside(tx, a); err != nil {
				return err
			}
		}
	}
	st.Apart = true
	return nil
}

// usedUpAt sums, per project, what charges took of the used-up
// allocations that have not ended by t: their part of the HFS pool.
func (st *accountState) usedUpAt(t time.Time) map[string]decimal.Decimal {
	out := map[string]decimal.Decimal{}
	for _, g := range st.UsedUp {
		if g.End.IsZero() || g.End.After(t) {
			for project, v := range g.Charged {
				out[project] = out[project].Add(v)
			}
		}
	}
	return out
}

// dropEndedUsedUp drops the sums of the used-up allocations that have
// ended by now (dropEnded's, for those kept apart).
func (st *accountState) dropEndedUsedUp(now time.Time) {
	st.UsedUp = slices.DeleteFunc(st.UsedUp, func(g usedUpSums) bool { return !g.End.IsZero() && !g.End.After(now) })
}

// writeSpent stores the records this change set, in id order.
func (st *accountState) writeSpent(tx Tx) error {
	for _, id := range slices.Sorted(maps.Keys(st.spent)) {
		s := st.spent[id]
		r := Record{Kind: usedUpKind, Key: usedUpKey(id), Deleted: s == nil}
		if s != nil {
			raw, err := json.Marshal(s)
			if err != nil {
				return fmt.Errorf("ledger: encode the sums of used-up allocation %d: %w", id, err)
			}
			r.Value = raw
		}
		if err := tx.PutRecord(r); err != nil {
			return err
		}
	}
	st.spent = nil
	return nil
}

// activeAndHeld are the account's allocations active at t that a change
// may take from or must count: those not used up (Tx.ActiveAllocations)
// and the used-up ones that liens still hold (st.Reserved), which count
// against what the account can spend. In id order.
func activeAndHeld(tx Tx, st *accountState, account string, t time.Time) ([]Allocation, error) {
	active, err := tx.ActiveAllocations(account, t)
	if err != nil || len(st.Reserved) == 0 {
		return active, err
	}
	listed := make(map[uint64]bool, len(active))
	for _, a := range active {
		listed[a.ID] = true
	}
	added := false
	for _, sums := range st.Reserved {
		for id := range sums {
			if listed[id] {
				continue
			}
			listed[id] = true
			a, ok, err := tx.Allocation(id)
			if err != nil {
				return nil, err
			}
			if ok && a.Account == account && a.ActiveAt(t) {
				active, added = append(active, a), true
			}
		}
	}
	if added {
		slices.SortFunc(active, func(a, b Allocation) int { return cmp.Compare(a.ID, b.ID) })
	}
	return active, nil
}
