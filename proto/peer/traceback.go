package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// The operations of traceback: a bank forwards the liens, charges and
// releases of the jobs of its projects homed at a peer (ledger.Home) to
// that peer, which makes them on the home project in its own credits.
const (
	OpLien    Op = "lien"
	OpCharge  Op = "charge"
	OpRelease Op = "release"
)

// Record kinds of traceback at the forwarding bank: the transaction each
// scheduler's request began (so that a retry of the request finds it), and
// the home of each job whose lien was forwarded (so that its release
// finds it).
const (
	recordRequest  = "peer.request"
	recordHomedJob = "peer.job"
)

// JobOp is the body of a forwarded lien, charge or release: the job as
// the forwarding bank knows it (its machine and id there; the home bank
// prefixes the machine with the peer's name), the home project, and the
// amount in the home bank's credits.
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

// BeginOnce begins a forwarded operation, once for a scheduler's request:
// a retry of the request (actor and id) finds the transaction the first
// try began, whatever it now prices. A request without an id begins a
// transaction each time. A lien's transaction also records the job's home,
// which HomedJob reads.
func (r *Registry) BeginOnce(ctx context.Context, req ledger.Request, peerName string, op Op, body JobOp, amount decimal.Decimal) (Transaction, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Transaction{}, fmt.Errorf("peer: encode %s: %w", op, err)
	}
	key := req.Actor + "/" + req.ID
	return ledger.Mutate(ctx, r.l, ledger.Request{Actor: req.Actor}, ledger.KindRecord, nil, func(w *ledger.Writer) (Transaction, error) {
		if req.ID != "" {
			if rec, ok, err := w.Tx().Record(recordRequest, key); err != nil {
				return Transaction{}, err
			} else if ok {
				var id string
				if err := json.Unmarshal(rec.Value, &id); err != nil {
					return Transaction{}, fmt.Errorf("%w: request %s: %v", ledger.ErrCorrupt, rec.Key, err)
				}
				return getTx(w.Tx(), id)
			}
		}
		if _, err := get(w.Tx(), peerName); err != nil {
			return Transaction{}, err
		}
		t := Transaction{ID: newTxID(), Peer: peerName, Op: op, Body: raw, Amount: amount, State: StatePending, Created: w.Now()}
		if err := putTx(w, t, fmt.Sprintf("%s of job %s at %s begun", op, body.JobID, peerName)); err != nil {
			return t, err
		}
		if req.ID != "" {
			id, _ := json.Marshal(t.ID)
			if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: "request " + ledger.Excerpt(req.ID),
				Record: &ledger.Record{Kind: recordRequest, Key: key, Value: id}}); err != nil {
				return t, err
			}
		}
		if op != OpLien {
			return t, nil
		}
		home, err := json.Marshal(ledger.Home{Peer: peerName, Project: body.Project})
		if err != nil {
			return t, err
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: "job " + body.JobID + " homed at " + peerName,
			Record: &ledger.Record{Kind: recordHomedJob, Key: body.Machine + "/" + body.JobID, Value: home}})
		return t, err
	})
}

// HomedJob is the home of a job whose lien was forwarded from here, if
// any.
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

// WithinCreditLine says whether the liens and charges pending with a
// project's home bank (their amounts in the home bank's credits) are
// within the project's credit line: what this bank may accept while the
// home bank cannot be reached. A zero credit line accepts nothing.
func (r *Registry) WithinCreditLine(ctx context.Context, home ledger.Home) (bool, error) {
	if !home.CreditLine.IsPositive() {
		return false, nil
	}
	pending, err := r.Transactions(ctx, true)
	if err != nil {
		return false, err
	}
	owed := decimal.Zero
	for _, t := range pending {
		if t.Peer != home.Peer || (t.Op != OpLien && t.Op != OpCharge) {
			continue
		}
		var j JobOp
		if err := json.Unmarshal(t.Body, &j); err != nil {
			return false, fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, t.ID, err)
		}
		if j.Project == home.Project {
			owed = owed.Add(t.Amount)
		}
	}
	return owed.LessThanOrEqual(home.CreditLine), nil
}
