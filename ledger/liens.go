package ledger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// LienState is where a lien is in its life.
type LienState string

// The lien states. Only an active lien that has not reached its expiry
// holds credits.
const (
	LienActive   LienState = "active"
	LienSettled  LienState = "settled"  // its job was charged in full; the rest was released
	LienReleased LienState = "released" // released without (further) charge
	LienExpired  LienState = "expired"  // the sweeper found it past its expiry
)

// Hold is part of an amount on one allocation: what a lien holds there, or
// what a charge debited from it.
type Hold struct {
	Allocation uint64          `json:"allocation"`
	Amount     decimal.Decimal `json:"amount"`
}

// JobRef is the job a lien or a charge is for, and the project, account
// and user that pay for it. (Its fields encode as the lien's and charge's
// own: it is embedded.)
type JobRef struct {
	JobID   string `json:"job_id"`
	Machine string `json:"machine"`
	Project string `json:"project"`
	Account string `json:"account"`
	User    string `json:"user"`
}

// Lien reserves credits for a running job. It is keyed by machine and job
// id. Detail is the lien layer's own record (the request that was priced,
// the policy), kept opaque here.
type Lien struct {
	ID uint64 `json:"id"`
	JobRef
	Amount decimal.Decimal `json:"amount"`
	Holds  []Hold          `json:"holds"`
	// Charged is what incremental charges have taken against it so far.
	Charged decimal.Decimal `json:"charged"`
	Created time.Time       `json:"created"`
	Expires time.Time       `json:"expires"`
	State   LienState       `json:"state"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// HoldsAt reports whether the lien holds credits at time t: it is active
// and not yet expired. An expired lien stops counting at once, before any
// sweeper marks it.
func (l Lien) HoldsAt(t time.Time) bool { return l.State == LienActive && t.Before(l.Expires) }

// Charge is a usage record: what a job was charged, and from where.
type Charge struct {
	ID uint64 `json:"id"`
	JobRef
	Lien   uint64          `json:"lien,omitempty"`
	Amount decimal.Decimal `json:"amount"`
	// Debits say where Amount came from; an allocation may have been driven
	// below zero (Overdrawn says by how much in all).
	Debits    []Hold          `json:"debits"`
	Overdrawn decimal.Decimal `json:"overdrawn"`
	// Refunded is the total refunded; Refunds says to which allocations.
	Refunded decimal.Decimal `json:"refunded"`
	Refunds  []Hold          `json:"refunds,omitempty"`
	Final    bool            `json:"final"`
	Time     time.Time       `json:"time"`
	Detail   json.RawMessage `json:"detail,omitempty"`
}

// Record is a named piece of configuration or state that the layers above
// the ledger keep (rate tables, policies, quotes, reservations): stored,
// journaled and audited like everything else, but opaque here.
type Record struct {
	Kind    string          `json:"kind"`
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	// Replaces, in a journal entry, is the kind of a record of the same
	// key that this one takes the place of: it is deleted as this one is
	// written, in the same entry (a record that moves from one kind to
	// another, as a transaction from pending to answered, costs one entry).
	Replaces string `json:"replaces,omitempty"`
}

// Writes are the records an entry's record writes: itself, and the
// deletion of the one it replaces, if any.
func (r Record) Writes() []Record {
	replaces := r.Replaces
	r.Replaces = ""
	if replaces == "" {
		return []Record{r}
	}
	return []Record{r, {Kind: replaces, Key: r.Key, Deleted: true}}
}

// NetDebits is what the charge took from each allocation, less refunds (an
// allocation may appear more than once).
func (c Charge) NetDebits() []Hold {
	net := append([]Hold(nil), c.Debits...)
	for _, r := range c.Refunds {
		net = append(net, Hold{Allocation: r.Allocation, Amount: r.Amount.Neg()})
	}
	return net
}

// OpenLiens counts the active liens of every account (past their expiry
// or not), for the server's metrics.
func (l *Ledger) OpenLiens(ctx context.Context) (int, error) {
	n := 0
	err := l.store.View(ctx, func(tx Tx) error {
		nodes, err := tx.Nodes()
		if err != nil {
			return err
		}
		for _, node := range nodes {
			if node.IsAccount() {
				liens, err := tx.ActiveLiens(node.Name)
				if err != nil {
					return err
				}
				n += len(liens)
			}
		}
		return nil
	})
	return n, err
}
