package peer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	// transaction is done (applied) or refused (for good: nothing was
	// applied, and a sending of it again gets the same refusal).
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

// Refusals is how the bank that applies a peer's transactions tells a
// final refusal and gives it again: Keep is the answer to keep for err,
// ok false when err is none or not final (the bank busy or failing: the
// peer sends it again); Give is the error a kept answer says.
type Refusals interface {
	Keep(err error) (answer json.RawMessage, ok bool)
	Give(answer json.RawMessage) error
}

// refused is the record of a received transaction refused for good: what
// reconcile compares, and the answer every sending of it gets.
type refused struct {
	Exchanged
	Answer json.RawMessage `json:"answer"`
}

// Receive applies a transaction a peer began and records it as received,
// in one change: apply makes the change and says the amount it moved. req
// is the peer's request, whose id is the transaction's, so that a
// transaction sent again gets the first answer and is applied once;
// peerName is the peer (its client's name), body the request's body as
// received.
//
// The first final answer is the transaction's for good, a refusal too:
// the API keeps no answer to a change that was refused, so a refusal
// (refusals.Keep) is recorded as the transaction received, refused, and
// a later sending of it gets the same refusal and applies nothing, even
// if it would apply now. Else two senders of one transaction (two
// servers of the asking bank) could see it refused, and the asking bank
// record that, while a second sending, after a deposit, applies it.
func Receive[R any](ctx context.Context, l *ledger.Ledger, req ledger.Request, peerName string, op Op, body []byte, refusals Refusals, apply func(w *ledger.Writer) (R, decimal.Decimal, error)) (R, error) {
	for {
		var given bool
		r, err := ledger.Mutate(ctx, l, req, ledger.KindRecord, json.RawMessage(body), func(w *ledger.Writer) (R, error) {
			var zero R
			kept, ok, err := keptRefusal(w.Tx(), peerName, req.ID, body)
			if given = ok; err != nil || ok {
				return zero, cmp.Or(err, refusals.Give(kept))
			}
			r, amount, err := apply(w)
			if err != nil {
				return r, err
			}
			x := Exchanged{ID: req.ID, Peer: peerName, Direction: Received, Op: op, State: StateDone, Amount: amount,
				Digest: digest(body), Began: BeganAt(req.ID, w.Now()), Recorded: w.Now()}
			return r, appendReceived(w, x, x, "applied")
		})
		answer, final := refusals.Keep(err)
		if given || !final || errors.Is(err, ledger.ErrRequestConflict) {
			return r, err
		}
		applied, rerr := keepRefusal(ctx, l, req, peerName, op, body, answer)
		if rerr != nil {
			return r, errors.Join(err, rerr)
		}
		if !applied {
			return r, err
		}
		// Another sending applied it meanwhile: its answer is the first.
	}
}

// keptRefusal is the refusal kept for transaction id of peerName, ok
// false if none was; a body other than the one refused is a request
// conflict.
func keptRefusal(tx ledger.Tx, peerName, id string, body []byte) (json.RawMessage, bool, error) {
	rec, ok, err := tx.Record(recordReceived, receivedKey(peerName, id))
	if err != nil || !ok {
		return nil, false, err
	}
	var x refused
	if err := json.Unmarshal(rec.Value, &x); err != nil {
		return nil, false, fmt.Errorf("%w: received transaction %s: %v", ledger.ErrCorrupt, rec.Key, err)
	}
	if x.State != StateRefused && x.State != StateWithdrawn {
		return nil, false, nil
	}
	if x.Digest != digest(body) {
		return nil, false, fmt.Errorf("%w: transaction %s of %s was refused for another body", ledger.ErrRequestConflict, ledger.Excerpt(id), peerName)
	}
	return x.Answer, true, nil
}

// keepRefusal records the transaction refused, answer its refusal, unless
// it was applied (by another sending) or its refusal kept meanwhile:
// applied says it was.
func keepRefusal(ctx context.Context, l *ledger.Ledger, req ledger.Request, peerName string, op Op, body []byte, answer json.RawMessage) (applied bool, err error) {
	_, err = ledger.Mutate(ctx, l, ledger.Request{Actor: req.Actor}, ledger.KindRecord, nil, func(w *ledger.Writer) (struct{}, error) {
		_, ok, err := w.Tx().Request(ledger.RequestKey{Client: req.Actor, ID: req.ID})
		if applied = ok; err != nil || ok {
			return struct{}{}, err
		}
		if _, ok, err := w.Tx().Record(recordReceived, receivedKey(peerName, req.ID)); err != nil || ok {
			return struct{}{}, err
		}
		x := Exchanged{ID: req.ID, Peer: peerName, Direction: Received, Op: op, State: StateRefused, Amount: decimal.Zero,
			Digest: digest(body), Began: BeganAt(req.ID, w.Now()), Recorded: w.Now()}
		return struct{}{}, appendReceived(w, x, refused{Exchanged: x, Answer: answer}, "refused")
	})
	return applied, err
}

// appendReceived journals x's record, value, as the transaction
// received: with the entry of what the transaction applied, if any, else
// in an entry of its own, which says what became of it (said).
func appendReceived(w *ledger.Writer, x Exchanged, value any, said string) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("peer: encode received transaction %s: %w", x.ID, err)
	}
	_, err = w.AppendRecord(ledger.Entry{Kind: ledger.KindRecord, Ref: x.Peer, Description: fmt.Sprintf("%s from %s %s", x.Op, x.Peer, said)},
		ledger.Record{Kind: recordReceived, Key: receivedKey(x.Peer, x.ID), Value: raw})
	return err
}

// Exchanged lists the transactions between this bank and a peer that
// began in [from, to) (a zero bound is open): those begun here and those
// applied here, in the order they began.
func (r *Registry) Exchanged(ctx context.Context, peerName string, from, to time.Time) ([]Exchanged, error) {
	in := func(t time.Time) bool { return (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to)) }
	var out []Exchanged
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		sent, err := allTxs(tx)
		if err != nil {
			return err
		}
		for _, t := range sent {
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
