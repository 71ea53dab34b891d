package peer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// recordReceived is the kind of the records of the transactions peers
// began that were applied here, by peer and id (receivedKey).
const recordReceived = "peer.received"

// Direction says which bank began a transaction, from this bank's side.
type Direction string

// The directions.
const (
	// Sent: this bank began it (Transaction), the peer applies it.
	Sent Direction = "sent"
	// Received: the peer began it, this bank applied it.
	Received Direction = "received"
)

// Exchanged is one transaction between this bank and a peer as one of
// the two recorded it, whatever its operation: what reconcile compares
// between the banks, and statements add up. A new operation is compared
// and counted as soon as it is begun with Begin and applied with Receive.
type Exchanged struct {
	ID string `json:"id"`
	// Peer is the other bank, by the name the recording bank gives it.
	Peer      string    `json:"peer"`
	Direction Direction `json:"direction"`
	Op        Op        `json:"op"`
	// State is the asking bank's (pending, done, refused); a received
	// transaction is done: it was applied.
	State State `json:"state"`
	// Amount is what it moves: as asked, when sent; as applied, when
	// received.
	Amount decimal.Decimal `json:"amount"`
	// Digest is the SHA-256 of the body, as sent or as received.
	Digest string `json:"digest"`
	// Began is when the asking bank began it, by its clock: the time its
	// id carries (BeganAt). Periods select transactions by it, so that
	// both banks select the same ones.
	Began time.Time `json:"began"`
	// Recorded is when the recording bank journaled it: begun, or applied.
	Recorded time.Time `json:"recorded"`
}

// digest is the hex SHA-256 of a transaction's body.
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// BeganAt is the time a transaction id made by this package carries
// (newTxID: "tx-", then the time in nanoseconds and random bytes in hex),
// else recorded: an id made otherwise says nothing of its time.
func BeganAt(id string, recorded time.Time) time.Time {
	rest, ok := strings.CutPrefix(id, "tx-")
	if !ok || len(rest) != 32 {
		return recorded
	}
	b, err := hex.DecodeString(rest[:16])
	if err != nil {
		return recorded
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC()
}

// exchanged is a transaction begun here, as reconcile compares it.
func (t Transaction) exchanged() Exchanged {
	return Exchanged{ID: t.ID, Peer: t.Peer, Direction: Sent, Op: t.Op, State: t.State, Amount: t.Amount,
		Digest: digest(t.Body), Began: BeganAt(t.ID, t.Created), Recorded: t.Created}
}

// receivedKey is the key of a received transaction's record: by peer, so
// that one peer's are read together, then by id.
func receivedKey(peerName, id string) string { return peerName + "/" + id }

// Receive applies a transaction a peer began and records it as received,
// in one change: apply makes the change and says the amount it moved. req
// is the peer's request, whose id is the transaction's, so that a
// transaction sent again gets the first answer and is applied once;
// peerName is the peer (its client's name), body the request's body as
// received.
func Receive[R any](ctx context.Context, l *ledger.Ledger, req ledger.Request, peerName string, op Op, body []byte, apply func(w *ledger.Writer) (R, decimal.Decimal, error)) (R, error) {
	return ledger.Mutate(ctx, l, req, ledger.KindRecord, json.RawMessage(body), func(w *ledger.Writer) (R, error) {
		r, amount, err := apply(w)
		if err != nil {
			return r, err
		}
		x := Exchanged{ID: req.ID, Peer: peerName, Direction: Received, Op: op, State: StateDone, Amount: amount,
			Digest: digest(body), Began: BeganAt(req.ID, w.Now()), Recorded: w.Now()}
		raw, err := json.Marshal(x)
		if err != nil {
			return r, fmt.Errorf("peer: encode received transaction %s: %w", x.ID, err)
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: x.Peer, Description: fmt.Sprintf("%s from %s applied", op, x.Peer),
			Record: &ledger.Record{Kind: recordReceived, Key: receivedKey(x.Peer, x.ID), Value: raw}})
		return r, err
	})
}

// Exchanged lists the transactions between this bank and a peer that
// began in [from, to) (a zero bound is open): those begun here and those
// applied here, in the order they began.
func (r *Registry) Exchanged(ctx context.Context, peerName string, from, to time.Time) ([]Exchanged, error) {
	in := func(t time.Time) bool { return (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to)) }
	var out []Exchanged
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		sent, err := tx.Records(recordTx)
		if err != nil {
			return err
		}
		for _, rec := range sent {
			t, err := decodeTx(rec)
			if err != nil {
				return err
			}
			if x := t.exchanged(); t.Peer == peerName && in(x.Began) {
				out = append(out, x)
			}
		}
		received, err := tx.Records(recordReceived)
		if err != nil {
			return err
		}
		for _, rec := range received {
			if !strings.HasPrefix(rec.Key, receivedKey(peerName, "")) {
				continue
			}
			var x Exchanged
			if err := json.Unmarshal(rec.Value, &x); err != nil {
				return fmt.Errorf("%w: received transaction %s: %v", ledger.ErrCorrupt, rec.Key, err)
			}
			if in(x.Began) {
				out = append(out, x)
			}
		}
		return nil
	})
	sortExchanged(out)
	return out, err
}
