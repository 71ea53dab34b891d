package peer

import (
	"cmp"
	"context"
	"slices"

	"github.com/shopspring/decimal"
)

// Statement is what two banks did for each other in a period, as this
// bank recorded it: per direction and operation, the transactions done
// (applied by the other bank) and what they came to, the pending ones,
// and the refused (or withdrawn: nothing applied either way). Totals are per direction: Sent what this bank asked of
// the peer and the peer applied (credits granted there, usage reported
// to it, jobs charged to a home project there), Received what the peer
// asked of this bank and this bank applied. Holds (Op.Holds) are listed
// and left out of the totals: the charge that ends a hold counts. A
// refund (Op.Returns) gives back part of a charge: the totals subtract it.
type Statement struct {
	Peer     string          `json:"peer"`
	Period   Period          `json:"period"`
	Lines    []StatementLine `json:"lines"`
	Sent     decimal.Decimal `json:"total_sent"`
	Received decimal.Decimal `json:"total_received"`
}

// StatementLine is one direction and operation of a statement.
type StatementLine struct {
	Direction Direction `json:"direction"`
	Op        Op        `json:"op"`
	// Hold marks an operation that holds credits (Op.Holds): not in the
	// totals.
	Hold    bool            `json:"hold,omitempty"`
	Count   int             `json:"count"`
	Amount  decimal.Decimal `json:"amount"`
	Pending int             `json:"pending"`
	// PendingAmount is what the pending ones would come to.
	PendingAmount decimal.Decimal `json:"pending_amount"`
	Refused       int             `json:"refused"`
}

// Holds says whether an operation only holds credits or lets them go (a
// traceback lien, its release or withdrawal), moving none: the charge
// that ends the hold moves them.
func (o Op) Holds() bool { return o == OpLien || o == OpRelease || o == OpWithdraw }

// Returns says whether an operation gives back what another moved (a
// traceback refund of a job's charges).
func (o Op) Returns() bool { return o == OpRefund }

// Statement is what this bank and the peer did for each other in the
// transactions begun in p (BeganAt), from this bank's records: every
// operation alike, as reconcile compares them.
func (r *Registry) Statement(ctx context.Context, peerName string, p Period) (Statement, error) {
	xs, err := r.Exchanged(ctx, peerName, p.From, p.To)
	if err != nil {
		return Statement{}, err
	}
	st := Statement{Peer: peerName, Period: p, Lines: []StatementLine{}, Sent: decimal.Zero, Received: decimal.Zero}
	for _, x := range xs {
		i := slices.IndexFunc(st.Lines, func(l StatementLine) bool { return l.Direction == x.Direction && l.Op == x.Op })
		if i < 0 {
			st.Lines = append(st.Lines, StatementLine{Direction: x.Direction, Op: x.Op, Hold: x.Op.Holds(), Amount: decimal.Zero, PendingAmount: decimal.Zero})
			i = len(st.Lines) - 1
		}
		l := &st.Lines[i]
		switch x.State {
		case StatePending:
			l.Pending++
			l.PendingAmount = l.PendingAmount.Add(x.Amount)
		case StateRefused, StateWithdrawn:
			l.Refused++
		default:
			l.Count++
			l.Amount = l.Amount.Add(x.Amount)
			if l.Hold {
				break
			}
			moved := x.Amount
			if x.Op.Returns() {
				moved = moved.Neg()
			}
			if x.Direction == Sent {
				st.Sent = st.Sent.Add(moved)
			} else {
				st.Received = st.Received.Add(moved)
			}
		}
	}
	slices.SortFunc(st.Lines, func(a, b StatementLine) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Op, b.Op))
	})
	return st, nil
}
