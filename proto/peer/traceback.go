package peer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// The operations of traceback: a bank forwards the liens, charges,
// releases and refunds of the jobs of its projects homed at a peer
// (ledger.Home) to that peer, which makes them on the home project in its
// own credits.
const (
	OpLien    Op = "lien"
	OpCharge  Op = "charge"
	OpRelease Op = "release"
	OpRefund  Op = "refund"
)

// Owes says whether a forwarded operation spends the home project's
// credits (a lien holds them, a charge takes them): what a credit line
// bounds while the home bank is away. A release or refund only gives
// credits back.
func (o Op) Owes() bool { return o == OpLien || o == OpCharge }

// Record kinds of traceback at the forwarding bank: the home of each job
// whose lien or charge was forwarded, with the rate ratio it was converted
// by (so that its release and refunds find it), and, in a bank
// written by an earlier ingot, the transaction each scheduler's request
// began (now kept with the request, BeginOnce).
const (
	recordRequest  = "peer.request"
	recordHomedJob = "peer.job"
)

// JobOp is the body of a forwarded lien, charge, release or refund: the
// job as the forwarding bank knows it (its machine and id there; the home
// bank prefixes the machine with the peer's name), the home project, and
// the amount in the home bank's credits (a refund's zero: all that is left
// of the job's charges there).
type JobOp struct {
	Project string          `json:"project"`
	Machine string          `json:"machine"`
	JobID   string          `json:"job_id"`
	User    string          `json:"user,omitempty"`
	Amount  decimal.Decimal `json:"amount"`
	// Expires is when a lien ends (a lien's only).
	Expires time.Time `json:"expires,omitzero"`
	// Final says a charge is the job's last (a charge's only).
	Final bool `json:"final,omitempty"`
	// Description says why a refund was made (a refund's only).
	Description string `json:"description,omitempty"`
	// Withdraws are the job's earlier liens the forwarding bank withdrew
	// and whose withdrawals it has not had answered yet (a lien's only):
	// the home bank applies each withdrawal (Withdrawn) in the change that
	// places this lien, before it, so that a copy of a withdrawn lien that
	// arrives after can neither place the job's lien again nor have its
	// withdrawal release this one, whatever request id the scheduler
	// placed this one under.
	Withdraws []WithdrawnLien `json:"withdraws,omitempty"`
}

// WithdrawnLien is a lien transaction withdrawn, by its id and the hex
// SHA-256 of its body (JobOp.Withdraws).
type WithdrawnLien struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
}

// Withdrawals are the withdrawals of the liens a lien's body names
// (Withdraws), each of this lien's job, for the home bank to apply
// (Withdrawn) before it places it.
func (j JobOp) Withdrawals() []Withdrawal {
	job := j
	job.Withdraws = nil
	out := make([]Withdrawal, len(j.Withdraws))
	for i, wl := range j.Withdraws {
		out[i] = Withdrawal{ID: wl.ID, Digest: wl.Digest, Lien: job}
	}
	return out
}

// Check refuses a body a peer could not have meant.
func (j JobOp) Check(op Op) error {
	switch {
	case j.Project == "" || j.Machine == "" || j.JobID == "":
		return fmt.Errorf("%w: %s: project, machine and job_id are needed", ledger.ErrInvalid, op)
	case strings.Contains(j.Machine, ":"):
		return fmt.Errorf("%w: %s: machine %q: a peer's machine has no ':'", ledger.ErrInvalid, op, j.Machine)
	case j.Amount.IsNegative():
		return fmt.Errorf("%w: %s: amount %s is below 0", ledger.ErrInvalid, op, j.Amount)
	case op == OpLien && j.Expires.IsZero():
		return fmt.Errorf("%w: lien: expires is needed", ledger.ErrInvalid)
	case op != OpLien && len(j.Withdraws) > 0:
		return fmt.Errorf("%w: %s: withdraws is a lien's only", ledger.ErrInvalid, op)
	}
	return nil
}

// JobRef is the job at the home bank: its machine is the peer's, named
// "PEER:MACHINE", so that a peer reaches only its own jobs.
func (j JobOp) JobRef(peerName string) ledger.JobRef {
	return ledger.JobRef{JobID: j.JobID, Machine: peerName + ":" + j.Machine, Project: j.Project, User: j.User}
}

// HomeAmount converts an amount of this bank's credits into the home
// bank's: × the home's rate ratio, rounded up to this bank's precision
// (places), so that the home bank is never charged less than the work
// cost here. The transaction carries the converted amount, which the home
// bank applies as it is: both banks record the same figure.
func HomeAmount(amount decimal.Decimal, h ledger.Home, places int32) decimal.Decimal {
	return amount.Mul(h.RateRatio).RoundCeil(places)
}

// HomeRefund converts a refund of this bank's credits into the home
// bank's: × the rate ratio, rounded down, so that refunds of parts of a
// job's charge never come to more than the charge converted (HomeAmount,
// rounded up) and the last of them is not refused for it.
func HomeRefund(amount decimal.Decimal, h ledger.Home, places int32) decimal.Decimal {
	return amount.Mul(h.RateRatio).RoundFloor(places)
}

// BeginOnce begins a forwarded operation of a job homed at home, once for
// a scheduler's request:
// a retry of the request (actor and id) finds the transaction the first
// try began, as it is now, whatever it now prices; another operation
// under the same id is a request conflict. Once that transaction is
// withdrawn and the peer has answered its withdrawal, so that it is never
// applied there from then on, the request begins anew: a transaction of
// its own request, "after-" and the withdrawn one's id, which a retry
// finds the same way. A request without an id begins a transaction each
// time. local is what the operation costs in this bank's credits
// (Transaction.Local). A job's lien, or its charge when no lien was
// forwarded, also records the job's home (recordHome), which HomedJob
// reads. The answers Answered kept are journaled in the same change.
//
// awayRefusal is nil unless the peer is known away (Registry.Away); then
// a lien its away policy does not accept (AwayAccepts), of a request not
// asked before (a retry gets its first answer), is refused here,
// never sent, with awayRefusal as its answer (Transaction.NotSent), and
// not recorded as the request's answer: a retry asks again. Nothing is
// held at the peer, so nothing needs withdrawing there, and nothing was
// applied anywhere, so the refusal is kept to be journaled with the next
// change (as Answered keeps answers), not in a change of its own: a bank
// stopped before that loses its record of the refusal, never a credit.
func (r *Registry) BeginOnce(ctx context.Context, req ledger.Request, home ledger.Home, op Op, body JobOp, local decimal.Decimal, awayRefusal json.RawMessage) (Transaction, error) {
	if awayRefusal != nil && op == OpLien {
		if t, refused, err := r.refuseAway(ctx, req, home, body, local, awayRefusal); err != nil || refused {
			return t, err
		}
	}
	for {
		t, err := r.beginOnce(ctx, req, home, op, body, local)
		if err != nil || req.ID == "" || t.State != StateWithdrawn {
			return t, err
		}
		wd, err := r.Transaction(ctx, t.Withdrawal)
		if err != nil || wd.State == StatePending {
			return t, err
		}
		req.ID = "after-" + t.ID
	}
}

// refuseAway refuses a lien of a job homed at a peer known away, if the
// peer's away policy does not accept it (BeginOnce), and keeps the
// refusal to be journaled.
func (r *Registry) refuseAway(ctx context.Context, req ledger.Request, home ledger.Home, body JobOp, local decimal.Decimal, answer json.RawMessage) (Transaction, bool, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Transaction{}, false, fmt.Errorf("peer: encode %s: %w", OpLien, err)
	}
	now := r.l.Now()
	t := Transaction{ID: newTxID(), Peer: home.Peer, Op: OpLien, Body: raw, Amount: body.Amount, Local: local, State: StatePending, Created: now}
	refuse := false
	err = r.l.View(ctx, func(tx ledger.Tx) error {
		if req.ID != "" {
			_, asked, err := tx.Request(ledger.RequestKey{Client: req.Actor, ID: req.ID})
			if err != nil || asked {
				return err
			}
			if _, asked, err = begunBefore(tx, req); err != nil || asked {
				return err
			}
		}
		accepted, err := r.awayAccepts(tx, home, t)
		refuse = !accepted
		return err
	})
	if err != nil || !refuse {
		return t, false, err
	}
	t.State, t.NotSent, t.Answered, t.Answer = StateRefused, true, now, answer
	r.answered.give(map[string]Transaction{t.ID: t})
	return t, true, nil
}

// beginOnce is BeginOnce for one request id.
func (r *Registry) beginOnce(ctx context.Context, req ledger.Request, home ledger.Home, op Op, body JobOp, local decimal.Decimal) (Transaction, error) {
	peerName := home.Peer
	// The request's id is kept by the ledger with its answer, the
	// transaction begun (no journal entry of its own); what the request
	// asks leaves out the amount, which a retry may price otherwise.
	asked := struct {
		Peer    string `json:"peer"`
		Op      Op     `json:"op"`
		Project string `json:"project"`
		Machine string `json:"machine"`
		JobID   string `json:"job_id"`
	}{peerName, op, body.Project, body.Machine, body.JobID}
	batch := r.answered.take()
	ran := false
	// The request's answer is the scheduler's lien or charge, made from
	// the home bank's, not this transaction: the ledger does not hand it
	// to the server (req.Answer).
	t, err := ledger.Mutate(ctx, r.l, ledger.Request{Actor: req.Actor, ID: req.ID}, ledger.KindRecord, asked, func(w *ledger.Writer) (Transaction, error) {
		ran = true
		if err := settleWithin(w, batch); err != nil {
			return Transaction{}, err
		}
		if t, ok, err := begunBefore(w.Tx(), req); err != nil || ok {
			return t, err
		}
		if _, err := get(w.Tx(), peerName); err != nil {
			return Transaction{}, err
		}
		if op == OpLien {
			var err error
			if body.Withdraws, err = withdrawing(w.Tx(), peerName, body); err != nil {
				return Transaction{}, err
			}
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return Transaction{}, fmt.Errorf("peer: encode %s: %w", op, err)
		}
		t := Transaction{ID: newTxID(), Peer: peerName, Op: op, Body: raw, Amount: body.Amount, Local: local, State: StatePending, Created: w.Now()}
		if err := putTx(w, t, fmt.Sprintf("%s of job %s at %s begun", op, body.JobID, peerName)); err != nil {
			return t, err
		}
		return t, recordHome(w, home, op, body)
	})
	if err != nil || !ran {
		r.answered.give(batch)
	}
	if err != nil || ran {
		return t, err
	}
	// A retry: the ledger gave the transaction as the first try began it.
	return r.Transaction(ctx, t.ID)
}

// withdrawing are the liens of a job (body) withdrawn at a peer whose
// withdrawals are still pending: a new lien of the job names them
// (JobOp.Withdraws).
func withdrawing(tx ledger.Tx, peerName string, body JobOp) ([]WithdrawnLien, error) {
	pending, err := pendingTxs(tx)
	if err != nil {
		return nil, err
	}
	var out []WithdrawnLien
	for _, t := range pending {
		if t.Peer != peerName || t.Op != OpWithdraw {
			continue
		}
		var wd Withdrawal
		if err := json.Unmarshal(t.Body, &wd); err != nil {
			return nil, fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, t.ID, err)
		}
		if wd.Lien.Machine == body.Machine && wd.Lien.JobID == body.JobID {
			out = append(out, WithdrawnLien{ID: wd.ID, Digest: wd.Digest})
		}
	}
	return out, nil
}

// begunBefore is the transaction a request began when this bank kept its
// requests' transactions as records of their own (recordRequest), if it
// did: a retry of such a request, sent across an upgrade, finds it.
func begunBefore(tx ledger.Tx, req ledger.Request) (Transaction, bool, error) {
	if req.ID == "" {
		return Transaction{}, false, nil
	}
	rec, ok, err := tx.Record(recordRequest, req.Actor+"/"+req.ID)
	if err != nil || !ok {
		return Transaction{}, false, err
	}
	var id string
	if err := json.Unmarshal(rec.Value, &id); err != nil {
		return Transaction{}, false, fmt.Errorf("%w: request %s: %v", ledger.ErrCorrupt, rec.Key, err)
	}
	t, err := getTx(tx, id)
	return t, err == nil, err
}

// recordHome records the home of a job whose lien, or first charge, is
// forwarded: its peer, the home project, and the rate ratio (with the
// credit line) its amounts are converted by. A lien's is written as it
// comes (a lien placed again the same); a charge's only if the job has
// none (a charge without a lien), which costs a charge a read, not an
// entry.
func recordHome(w *ledger.Writer, home ledger.Home, op Op, body JobOp) error {
	key := body.Machine + "/" + body.JobID
	switch op {
	case OpLien:
	case OpCharge:
		if _, ok, err := w.Tx().Record(recordHomedJob, key); err != nil || ok {
			return err
		}
	default:
		return nil
	}
	raw, err := json.Marshal(home)
	if err != nil {
		return fmt.Errorf("peer: encode the home of job %s: %w", body.JobID, err)
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: home.Peer, Description: "job " + body.JobID + " homed at " + home.Peer,
		Record: &ledger.Record{Kind: recordHomedJob, Key: key, Value: raw}})
	return err
}

// answers are peers' answers to transactions, and this bank's refusals
// of those it did not send (refuseAway), kept until a change journals
// them.
type answers struct {
	mu   sync.Mutex
	byID map[string]Transaction
}

func (a *answers) give(ts map[string]Transaction) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = map[string]Transaction{}
	}
	for id, t := range ts {
		a.byID[id] = t
	}
}

func (a *answers) take() map[string]Transaction {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := a.byID
	a.byID = nil
	return ts
}

func (a *answers) get(id string) (Transaction, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.byID[id]
	return t, ok
}

func (r *Registry) kept(id string) bool {
	_, ok := r.answered.get(id)
	return ok
}

// Kept is a transaction as answered, if its answer is kept, not yet
// journaled (Answered).
func (r *Registry) Kept(id string) (Transaction, bool) { return r.answered.get(id) }

// Answered keeps a peer's answer (done: the peer keeps it too) to a
// transaction sent at once (traceback), to be journaled with the next change that begins one, or
// by RecordAnswers: so that a forwarded operation costs this bank one
// durable write, not two. Until then it is pending in the journal: if
// this bank stops first, the outbox sends it again and the peer answers
// as the first time. It returns t as answered.
func (r *Registry) Answered(t Transaction, state State, answer json.RawMessage) Transaction {
	t.State, t.Answer, t.Answered = state, answer, time.Now().UTC()
	r.answered.give(map[string]Transaction{t.ID: t})
	return t
}

// RecordAnswers journals the answers Answered kept, and the refusals
// BeginOnce kept.
func (r *Registry) RecordAnswers(ctx context.Context) error {
	batch := r.answered.take()
	if len(batch) == 0 {
		return nil
	}
	_, err := ledger.Mutate(ctx, r.l, ledger.Request{Actor: "peer-outbox"}, ledger.KindRecord, nil, func(w *ledger.Writer) (struct{}, error) {
		return struct{}{}, settleWithin(w, batch)
	})
	if err != nil {
		r.answered.give(batch)
	}
	return err
}

// settleWithin journals answers to the transactions still pending, and
// the refusals of those never sent (refuseAway), in id order.
func settleWithin(w *ledger.Writer, batch map[string]Transaction) error {
	for _, id := range slices.Sorted(maps.Keys(batch)) {
		a := batch[id]
		if a.NotSent {
			if err := putTx(w, a, fmt.Sprintf("%s at %s refused here, not sent: the peer is away", a.Op, a.Peer)); err != nil {
				return err
			}
			continue
		}
		t, err := getTx(w.Tx(), id)
		if err != nil {
			return err
		}
		if t.State != StatePending {
			continue
		}
		t.State, t.Answered, t.Answer = a.State, w.Now(), a.Answer
		if t.Op == OpRefund && t.State == StateDone && t.Amount.IsZero() {
			if t.Amount, err = refunded(t); err != nil {
				return err
			}
		}
		if err := putTx(w, t, fmt.Sprintf("%s at %s %s", t.Op, t.Peer, t.State)); err != nil {
			return err
		}
	}
	return nil
}

// CheckAnswer refuses a peer's answer that this bank could not record as
// t's: a refund of all that was left (its amount zero) whose answer does
// not say how much was refunded (refunded), which the transaction's
// record takes as its amount. Refused, the answer is never kept nor
// journaled, so that it holds up no other answer; t stays pending.
func CheckAnswer(t Transaction, answer json.RawMessage) error {
	if t.Op != OpRefund || !t.Amount.IsZero() {
		return nil
	}
	t.Answer = answer
	amount, err := refunded(t)
	if err == nil && amount.IsNegative() {
		err = fmt.Errorf("peer transaction %s: answer: refunded %s, below 0", t.ID, amount)
	}
	if err != nil {
		return fmt.Errorf("%w: %s answered a refund with what it cannot have refunded: %v", ErrBadAnswer, t.Peer, err)
	}
	return nil
}

// refunded is what the peer's answer to refund t (of all that was left)
// says it refunded: the transaction's amount once it is done, as the peer
// records it.
func refunded(t Transaction) (decimal.Decimal, error) {
	var r lien.JobRefund
	if err := json.Unmarshal(t.Answer, &r); err != nil {
		return decimal.Zero, fmt.Errorf("%w: peer transaction %s: answer: %v", ledger.ErrCorrupt, t.ID, err)
	}
	return r.Refunded, nil
}

// HomedJob is the home of a job whose lien or charge was forwarded from
// here, if any, with the rate ratio it was converted by.
func (r *Registry) HomedJob(ctx context.Context, machine, job string) (ledger.Home, bool, error) {
	var h ledger.Home
	var found bool
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		rec, ok, err := tx.Record(recordHomedJob, machine+"/"+job)
		if err != nil || !ok {
			return err
		}
		found = true
		if err := json.Unmarshal(rec.Value, &h); err != nil {
			return fmt.Errorf("%w: homed job %s: %v", ledger.ErrCorrupt, rec.Key, err)
		}
		return nil
	})
	return h, found, err
}

// Earlier are the job's (body's) transactions with t's peer that began
// before t and are still pending, their answers not kept, in the order
// they began: to be sent before t, since a charge, release or refund sent
// ahead of the job's lien or charge would find nothing at the peer to
// charge against, release or refund, and a lien ahead of an earlier one
// would be placed over by it.
func (r *Registry) Earlier(ctx context.Context, t Transaction, body JobOp) ([]Transaction, error) {
	pending, err := r.Transactions(ctx, true)
	if err != nil {
		return nil, err
	}
	var out []Transaction
	for _, p := range pending {
		if p.ID >= t.ID {
			break // in the order they began
		}
		if p.Peer != t.Peer || (!p.Op.Owes() && p.Op != OpRelease && p.Op != OpRefund) || r.kept(p.ID) {
			continue
		}
		var j JobOp
		if err := json.Unmarshal(p.Body, &j); err != nil {
			return nil, fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, p.ID, err)
		}
		if j.Machine == body.Machine && j.JobID == body.JobID {
			out = append(out, p)
		}
	}
	return out, nil
}

// AwayAccepts says whether this bank may accept a lien or charge of a
// project homed at a peer (home) while the peer cannot be reached: the
// peer's away policy accepts; the liens and charges pending with the peer
// (this one included; an answer kept, Answered, is no longer pending)
// cost no more than its credit line, in this bank's credits, whatever
// project they are of; and, if the project has a credit line of its own,
// those of its home project come to no more than that, in the peer's
// credits.
func (r *Registry) AwayAccepts(ctx context.Context, home ledger.Home) (bool, error) {
	var ok bool
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		var err error
		ok, err = r.awayAccepts(tx, home, Transaction{})
		return err
	})
	return ok, err
}

// awayAccepts is AwayAccepts within tx, with adding (zero: none), a
// transaction not begun yet, counted as pending.
func (r *Registry) awayAccepts(tx ledger.Tx, home ledger.Home, adding Transaction) (bool, error) {
	p, err := get(tx, home.Peer)
	if err != nil || p.WhenAway != AwayAccept {
		return false, err
	}
	pending, err := pendingTxs(tx)
	if err != nil {
		return false, err
	}
	if adding.ID != "" {
		pending = append(pending, adding)
	}
	owed, owedHome := decimal.Zero, decimal.Zero
	for _, t := range pending {
		if t.Peer != home.Peer || !t.Op.Owes() || r.kept(t.ID) {
			continue
		}
		owed = owed.Add(t.Local)
		var j JobOp
		if err := json.Unmarshal(t.Body, &j); err != nil {
			return false, fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, t.ID, err)
		}
		if j.Project == home.Project {
			owedHome = owedHome.Add(t.Amount)
		}
	}
	return owed.LessThanOrEqual(p.CreditLine) && (home.CreditLine == nil || owedHome.LessThanOrEqual(*home.CreditLine)), nil
}

// OpWithdraw withdraws a lien this bank forwarded to the peer and then
// refused (a Withdrawal): Registry.Withdraw begins it, Withdrawn applies
// it at the peer.
const OpWithdraw Op = "withdraw"

// Withdrawal is the body of OpWithdraw: the transaction withdrawn, by its
// id and the SHA-256 of its body (what the peer received, if it did), and
// its job, whose lien the peer releases if that transaction placed it.
type Withdrawal struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
	Lien   JobOp  `json:"lien"`
}

// check refuses a withdrawal a peer could not have meant: one naming no
// transaction, or no SHA-256 of a body, or a lien no peer sends.
func (wd Withdrawal) check() error {
	if _, err := hex.DecodeString(wd.Digest); wd.ID == "" || err != nil || len(wd.Digest) != 2*sha256.Size {
		return fmt.Errorf("%w: withdrawal: id and digest (the hex SHA-256 of the lien's body) are needed", ledger.ErrInvalid)
	}
	return wd.Lien.Check(OpLien)
}

// Withdraw withdraws a lien forwarded to a peer that this bank refused
// while the peer could not be reached (beyond what its away policy
// accepts): in one change the lien's transaction is withdrawn, no longer
// pending and never sent again, and a transaction that withdraws it at
// the peer (OpWithdraw) is begun, pending, for the outbox to send once the
// peer is back. The peer may have applied the lien already, its answer
// lost: then it releases it; if it has not, it records the lien
// withdrawn, so that a sending of it still on its way applies nothing.
// A transaction answered meanwhile (an answer kept, or journaled by
// another sender) is not withdrawn: Withdraw returns it as answered.
func (r *Registry) Withdraw(ctx context.Context, actor, id string) (Transaction, error) {
	batch := r.answered.take()
	t, err := ledger.Mutate(ctx, r.l, ledger.Request{Actor: actor}, ledger.KindRecord, nil, func(w *ledger.Writer) (Transaction, error) {
		if err := settleWithin(w, batch); err != nil {
			return Transaction{}, err
		}
		t, err := getTx(w.Tx(), id)
		if err != nil || t.State != StatePending {
			return t, err
		}
		var j JobOp
		if err := json.Unmarshal(t.Body, &j); err != nil || t.Op != OpLien {
			return t, fmt.Errorf("%w: transaction %s: only a lien is withdrawn, not this %s (%v)", ledger.ErrInvalid, id, t.Op, err)
		}
		raw, err := json.Marshal(Withdrawal{ID: t.ID, Digest: digest(t.Body), Lien: j})
		if err != nil {
			return t, fmt.Errorf("peer: encode withdrawal of %s: %w", t.ID, err)
		}
		wd := Transaction{ID: newTxID(), Peer: t.Peer, Op: OpWithdraw, Body: raw, Amount: decimal.Zero, State: StatePending, Created: w.Now()}
		if err := putTx(w, wd, fmt.Sprintf("withdrawal of %s at %s begun", t.ID, t.Peer)); err != nil {
			return t, err
		}
		t.State, t.Answered, t.Withdrawal = StateWithdrawn, w.Now(), wd.ID
		return t, putTx(w, t, fmt.Sprintf("%s of job %s at %s withdrawn", t.Op, j.JobID, t.Peer))
	})
	if err != nil {
		r.answered.give(batch)
	}
	return t, err
}

// Withdrawn applies a peer's withdrawal of a lien it began, within the
// change that receives the withdrawal (Receive), so that the two cannot
// cross: if the lien was applied here, release releases it (the bank
// releases the job's lien if it is still the one the lien placed, at the
// time given) and the lien's record says withdrawn; if it was not, it is
// recorded withdrawn, so that a sending of it that arrives later applies
// nothing and gets ErrWithdrawn (refusals.Keep), as a kept refusal is
// given.
func Withdrawn(w *ledger.Writer, peerName string, wd Withdrawal, refusals Refusals, release func(placed time.Time) error) error {
	if err := wd.check(); err != nil {
		return err
	}
	answer, ok := refusals.Keep(fmt.Errorf("%w: %s withdrew transaction %s", ErrWithdrawn, peerName, ledger.Excerpt(wd.ID)))
	if !ok {
		return fmt.Errorf("peer: %w is not kept as a final answer", ErrWithdrawn)
	}
	rec, found, err := w.Tx().Record(recordReceived, receivedKey(peerName, wd.ID))
	if err != nil {
		return err
	}
	var x refused
	if found {
		if err := json.Unmarshal(rec.Value, &x); err != nil {
			return fmt.Errorf("%w: received transaction %s: %v", ledger.ErrCorrupt, rec.Key, err)
		}
	}
	switch {
	case found && x.Digest != wd.Digest:
		return fmt.Errorf("%w: the withdrawal of transaction %s names another body than the one received", ledger.ErrRequestConflict, ledger.Excerpt(wd.ID))
	case found && x.Op != OpLien:
		return fmt.Errorf("%w: transaction %s is a %s: only a lien is withdrawn", ledger.ErrInvalid, ledger.Excerpt(wd.ID), x.Op)
	case found && x.State != StateDone:
		return nil // refused or withdrawn already: nothing was applied
	case found:
		if err := release(x.Recorded); err != nil {
			return err
		}
	default:
		x.Exchanged = Exchanged{ID: wd.ID, Peer: peerName, Direction: Received, Op: OpLien, Amount: decimal.Zero,
			Digest: wd.Digest, Began: BeganAt(wd.ID, w.Now()), Recorded: w.Now()}
	}
	x.State, x.Answer = StateWithdrawn, answer
	return appendReceived(w, x.Exchanged, x, "withdrawn")
}
