package peer

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Difference is a transaction the two banks do not record alike. Here and
// There are its records at this bank and at the peer (nil: none).
type Difference struct {
	ID      string     `json:"id"`
	Op      Op         `json:"op"`
	Began   time.Time  `json:"began"`
	Here    *Exchanged `json:"here"`
	There   *Exchanged `json:"there"`
	Problem string     `json:"problem"`
}

// Reconciliation is what reconcile found between this bank's records of
// the transactions with a peer that began in [From, To) and the peer's
// own: how many agree, and every one that does not.
type Reconciliation struct {
	Peer        string       `json:"peer"`
	From        time.Time    `json:"from,omitzero"`
	To          time.Time    `json:"to,omitzero"`
	Matched     int          `json:"matched"`
	Differences []Difference `json:"differences"`
}

// Compare pairs this bank's records of its transactions with a peer
// (here) with the peer's (there) by id, a transaction sent by one bank
// with the same transaction received by the other, and says where they
// differ: one missing on a side, a state that does not fit the other's
// (applied there, refused here), another amount, another body. A pending
// transaction is a difference until it is answered: the banks do not
// agree on it yet. Compare reads the generic record alone (Exchanged), so
// every operation is compared alike.
func Compare(peerName string, from, to time.Time, here, there []Exchanged) Reconciliation {
	rec := Reconciliation{Peer: peerName, From: from, To: to, Differences: []Difference{}}
	theirs := make(map[string]*Exchanged, len(there))
	for i := range there {
		theirs[there[i].ID] = &there[i]
	}
	seen := make(map[string]bool, len(here))
	for i := range here {
		h := &here[i]
		seen[h.ID] = true
		t := theirs[h.ID]
		if problem := mismatch(h, t); problem != "" {
			rec.Differences = append(rec.Differences, Difference{ID: h.ID, Op: h.Op, Began: h.Began, Here: h, There: t, Problem: problem})
		} else {
			rec.Matched++
		}
	}
	for i := range there {
		t := &there[i]
		if seen[t.ID] {
			continue
		}
		if problem := missingHere(t); problem != "" {
			rec.Differences = append(rec.Differences, Difference{ID: t.ID, Op: t.Op, Began: t.Began, There: t, Problem: problem})
		} else {
			rec.Matched++
		}
	}
	slices.SortFunc(rec.Differences, func(a, b Difference) int {
		return cmp.Or(a.Began.Compare(b.Began), cmp.Compare(a.ID, b.ID))
	})
	return rec
}

// mismatch says how this bank's record h and the peer's t (nil: none) of
// one transaction differ, "" if they agree.
func mismatch(h, t *Exchanged) string {
	if t != nil && t.Direction == h.Direction {
		return fmt.Sprintf("both banks record it as %s", h.Direction)
	}
	if h.Direction == Received {
		h, t = t, h // the asking bank's record first
		switch {
		case t.State.unapplied() && (h == nil || h.State.unapplied()):
			return "" // nothing applied on either side, or undone
		case t.State.unapplied() && h.State == StatePending:
			return fmt.Sprintf("%s here; still pending at the peer (its answer not recorded there yet)", t.State)
		case t.State.unapplied():
			return fmt.Sprintf("%s here; done at the peer", t.State)
		case h == nil:
			return "applied here; the peer has no record of beginning it"
		case h.State == StatePending:
			return "applied here; still pending at the peer (its answer not recorded there yet)"
		case h.State == StateRefused:
			return "applied here; the peer recorded a refusal"
		case h.State == StateWithdrawn:
			return "applied here; withdrawn at the peer (its withdrawal not applied here yet)"
		}
		return sameContent(h, t)
	}
	refusedThere := t != nil && t.State.unapplied()
	switch {
	case h.State == StateWithdrawn && t != nil && !refusedThere:
		return "withdrawn here; applied at the peer (the withdrawal not applied there yet)"
	case h.State == StateWithdrawn:
		return "" // never applied at the peer, refused there, or undone there
	case h.State == StatePending && t == nil:
		return "pending: not applied at the peer yet"
	case h.State == StatePending && refusedThere:
		return "pending here; refused at the peer (its answer not recorded here yet)"
	case h.State == StatePending:
		return "pending here; applied at the peer (its answer not recorded here yet)"
	case h.State == StateRefused && t != nil && !refusedThere:
		return "refused here; applied at the peer"
	case h.State == StateRefused:
		return ""
	case t == nil:
		return "done here; the peer has no record of applying it"
	case refusedThere:
		return "done here; the peer recorded a refusal"
	}
	return sameContent(h, t)
}

// unapplied says whether a transaction in this state left nothing applied
// at the bank that recorded it: refused, or withdrawn (never applied
// there, or undone).
func (s State) unapplied() bool { return s == StateRefused || s == StateWithdrawn }

// missingHere says what a record of the peer's that this bank has no
// record of means, "" if nothing is amiss (a refusal the peer recorded,
// of a transaction either bank began: nothing was applied).
func missingHere(t *Exchanged) string {
	switch {
	case t.Direction == Received && t.State.unapplied():
		return ""
	case t.Direction == Received:
		return "applied at the peer; no record here of beginning it"
	case t.State == StatePending:
		return "pending at the peer: not applied here yet"
	case t.State.unapplied():
		return ""
	}
	return "done at the peer; no record here of applying it"
}

// sameContent compares what the asking bank sent (sent) with what the
// other applied (applied).
func sameContent(sent, applied *Exchanged) string {
	switch {
	case sent.Op != applied.Op:
		return fmt.Sprintf("sent as %s, applied as %s", sent.Op, applied.Op)
	case !sent.Amount.Equal(applied.Amount):
		return fmt.Sprintf("amount %s sent, %s applied", sent.Amount, applied.Amount)
	case sent.Digest != applied.Digest:
		return "the body applied is not the body sent"
	}
	return ""
}

// sortExchanged orders transactions as they began.
func sortExchanged(xs []Exchanged) {
	slices.SortFunc(xs, func(a, b Exchanged) int { return cmp.Or(a.Began.Compare(b.Began), cmp.Compare(a.ID, b.ID)) })
}
