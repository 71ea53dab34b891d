package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// Record kinds of the exchange, by transaction id: a pending transaction
// (recordPending), which the outbox lists, and an answered one
// (recordTx), so that the outbox reads only what it has to send and a
// transaction is journaled once as it begins. A bank written by an
// earlier ingot also holds its pending transactions as recordTx, their
// recordPending value `true` (pendingMark).
const (
	recordTx      = "peer.tx"
	recordPending = "peer.pending"
)

// Op is what a transaction asks of the peer.
type Op string

// The operations.
const (
	// OpDeposit deposits into an account of the peer's that its agreement
	// names (a ledger.DepositSpec): a central bank granting an allocation
	// at a site.
	OpDeposit Op = "deposit"
)

// State is where a transaction is.
type State string

// The states: pending until the peer answers, then done (applied there)
// or refused (the peer's answer says why; nothing was applied there); or
// withdrawn by this bank before the peer answered (Registry.Withdraw):
// never sent again, and undone at the peer if it was applied there. A
// lien this bank refused itself, the peer known away and its away policy
// refusing, is refused and never sent (Transaction.NotSent).
const (
	StatePending   State = "pending"
	StateDone      State = "done"
	StateRefused   State = "refused"
	StateWithdrawn State = "withdrawn"
)

// Transaction is one cross-bank operation started here: its id, chosen
// here, is the request id the peer applies it under, so that however
// often it is sent, the peer applies it once.
type Transaction struct {
	ID   string          `json:"id"`
	Peer string          `json:"peer"`
	Op   Op              `json:"op"`
	Body json.RawMessage `json:"body"`
	// Amount is what the transaction moves, in this bank's credits as the
	// body states it (a deposit's amount): what reconcile compares with
	// what the peer applied, and statements add up.
	Amount decimal.Decimal `json:"amount"`
	// Local is what a forwarded job's operation costs in this bank's
	// credits (Amount is in the home bank's): what the peer's credit line
	// counts.
	Local   decimal.Decimal `json:"local,omitzero"`
	State   State           `json:"state"`
	Created time.Time       `json:"created"`
	// Withdrawal is the id of the transaction that withdraws this one
	// (OpWithdraw), once it is withdrawn.
	Withdrawal string `json:"withdrawal,omitempty"`
	// NotSent says this bank refused it itself, never sending it: the
	// peer was away and its away policy refused (BeginOnce). The peer has
	// no record of it; Answer is this bank's refusal.
	NotSent bool `json:"not_sent,omitempty"`
	// Answered is when the peer's answer was recorded; Answer is that
	// answer (for a refusal, its API error).
	Answered time.Time       `json:"answered,omitzero"`
	Answer   json.RawMessage `json:"answer,omitempty"`
}

// newTxID is a transaction id: a request id (auth.NewRequestID: ids that
// grow with time are the cheapest for the peer to keep), marked as one.
func newTxID() string { return "tx-" + auth.NewRequestID() }

// Begin journals a transaction with the peer, pending, before anything is
// sent: the outbox sends it from here until the peer answers. amount is
// what it moves (Transaction.Amount). A retry of the request gets the
// first answer: the same transaction.
func (r *Registry) Begin(ctx context.Context, req ledger.Request, peerName string, op Op, body any, amount decimal.Decimal) (Transaction, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Transaction{}, fmt.Errorf("peer: encode %s: %w", op, err)
	}
	id := newTxID()
	content := struct {
		Peer string          `json:"peer"`
		Op   Op              `json:"op"`
		Body json.RawMessage `json:"body"`
	}{peerName, op, raw}
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Transaction, error) {
		if _, err := get(w.Tx(), peerName); err != nil {
			return Transaction{}, err
		}
		t := Transaction{ID: id, Peer: peerName, Op: op, Body: raw, Amount: amount, State: StatePending, Created: w.Now()}
		return t, putTx(w, t, fmt.Sprintf("%s at %s begun", op, peerName))
	})
}

// Deposit begins a deposit at the peer (OpDeposit).
func (r *Registry) Deposit(ctx context.Context, req ledger.Request, name string, spec ledger.DepositSpec) (Transaction, error) {
	return r.Begin(ctx, req, name, OpDeposit, spec, spec.Amount)
}

// Settle records the peer's answer to a pending transaction: done or
// refused. A transaction already settled is left as it is (an answer
// that arrives twice is recorded once).
func (r *Registry) Settle(ctx context.Context, id string, state State, answer json.RawMessage) (Transaction, error) {
	// No request id: the change is its own guard against a second answer.
	req := ledger.Request{Actor: "peer-outbox"}
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, nil, func(w *ledger.Writer) (Transaction, error) {
		if err := settleWithin(w, map[string]Transaction{id: {State: state, Answer: answer}}); err != nil {
			return Transaction{}, err
		}
		return getTx(w.Tx(), id)
	})
}

// Transaction is one transaction started here, as it is now.
func (r *Registry) Transaction(ctx context.Context, id string) (Transaction, error) {
	var t Transaction
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		var err error
		t, err = getTx(tx, id)
		return err
	})
	return t, err
}

// Transactions lists the transactions started here, in id order (the
// order they began in), or only those still pending.
func (r *Registry) Transactions(ctx context.Context, pending bool) ([]Transaction, error) {
	var out []Transaction
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		var err error
		if pending {
			out, err = pendingTxs(tx)
		} else {
			out, err = allTxs(tx)
		}
		return err
	})
	return out, err
}

// pendingMark is the value of a pending transaction's recordPending in a
// bank written by an earlier ingot, its transaction in recordTx.
const pendingMark = "true"

// pendingTxs are the transactions still pending, in id order.
func pendingTxs(tx ledger.Tx) ([]Transaction, error) {
	recs, err := tx.Records(recordPending)
	if err != nil {
		return nil, err
	}
	out := make([]Transaction, 0, len(recs))
	for _, rec := range recs {
		t, err := decodePending(tx, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// allTxs are the transactions started here, in id order.
func allTxs(tx ledger.Tx) ([]Transaction, error) {
	answered, err := tx.Records(recordTx)
	if err != nil {
		return nil, err
	}
	pending, err := tx.Records(recordPending)
	if err != nil {
		return nil, err
	}
	out := make([]Transaction, 0, len(answered)+len(pending))
	for _, rec := range answered {
		t, err := decodeTx(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	for _, rec := range pending {
		if string(rec.Value) == pendingMark { // listed above
			continue
		}
		t, err := decodeTx(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Transaction) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// putTx journals a transaction's state, in one entry: a pending one as
// its recordPending; an answered one as its recordTx, which replaces its
// recordPending.
func putTx(w *ledger.Writer, t Transaction, what string) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("peer: encode transaction %s: %w", t.ID, err)
	}
	if t.State == StatePending {
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: t.Peer, Description: what,
			Record: &ledger.Record{Kind: recordPending, Key: t.ID, Value: raw}})
		return err
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: t.Peer, Description: what,
		Record: &ledger.Record{Kind: recordTx, Key: t.ID, Value: raw, Replaces: recordPending}})
	return err
}

func getTx(tx ledger.Tx, id string) (Transaction, error) {
	for _, kind := range []string{recordTx, recordPending} {
		rec, ok, err := tx.Record(kind, id)
		switch {
		case err != nil:
			return Transaction{}, err
		case ok && string(rec.Value) != pendingMark:
			return decodeTx(rec)
		}
	}
	return Transaction{}, fmt.Errorf("%w: no peer transaction %q", ledger.ErrNotFound, id)
}

// decodePending is the transaction of a recordPending.
func decodePending(tx ledger.Tx, rec ledger.Record) (Transaction, error) {
	if string(rec.Value) == pendingMark {
		return getTx(tx, rec.Key)
	}
	return decodeTx(rec)
}

func decodeTx(rec ledger.Record) (Transaction, error) {
	var t Transaction
	if err := json.Unmarshal(rec.Value, &t); err != nil {
		return Transaction{}, fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, rec.Key, err)
	}
	return t, nil
}
