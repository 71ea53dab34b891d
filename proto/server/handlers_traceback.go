package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
)

// Traceback. At the bank a job runs at: the lien, charge or release of a
// job whose project is homed at a peer is forwarded there (the lien
// package answers lien.HomedError), and the scheduler gets the home
// bank's answer. At the home bank: the exchange's endpoints make them on
// the home project, for a peer whose agreement names it.

// forwardLien forwards the lien the bank declined for its homed project.
func (s *Server) forwardLien(c *call, h *lien.HomedError) (lien.LienResult, error) {
	body := s.jobOp(h)
	body.Expires = h.Expires
	t, err := s.forward(c, h.Home, peer.OpLien, body, h.Amount.Credits)
	if err != nil {
		return lien.LienResult{}, err
	}
	l, err := h.ForwardedLien(s.ledger.Now())
	f := forwarded(h.Home, t)
	return lien.LienResult{Lien: l, Project: h.Job.Project, Requested: h.Job.Project, Quote: h.Amount, Home: &f}, err
}

// forwardCharge forwards the charge the bank declined for its homed
// project.
func (s *Server) forwardCharge(c *call, h *lien.HomedError) (lien.ChargeResult, error) {
	body := s.jobOp(h)
	body.Final = h.Final
	t, err := s.forward(c, h.Home, peer.OpCharge, body, h.Amount.Credits)
	if err != nil {
		return lien.ChargeResult{}, err
	}
	return h.ForwardedCharge(s.ledger.Now(), forwarded(h.Home, t), s.ledger.Settings().Precision)
}

// forwarded says where a forwarded operation was made, and the home
// bank's answer to it if it answered.
func forwarded(home ledger.Home, t peer.Transaction) lien.Forwarded {
	f := lien.Forwarded{Peer: home.Peer, Project: home.Project, RateRatio: home.RateRatio, Transaction: t.ID, State: string(t.State)}
	if t.State == peer.StateDone {
		f.Answer = t.Answer
	}
	return f
}

// forwardRelease forwards the release of a job whose lien was forwarded;
// notHere is the bank's own answer, for a job that was not.
func (s *Server) forwardRelease(c *call, job api.ReleaseRequest, notHere error) (ledger.Lien, error) {
	home, ok, err := s.peers.HomedJob(c.r.Context(), job.Machine, job.ID)
	if err != nil || !ok {
		return ledger.Lien{}, errors.Join(notHere, err)
	}
	body := peer.JobOp{Project: home.Project, Machine: job.Machine, JobID: job.ID, Amount: decimal.Zero}
	if _, err := s.forward(c, home, peer.OpRelease, body, decimal.Zero); err != nil {
		return ledger.Lien{}, err
	}
	return ledger.Lien{JobRef: ledger.JobRef{JobID: job.ID, Machine: job.Machine}, Amount: decimal.Zero, Holds: []ledger.Hold{}, Charged: decimal.Zero, State: ledger.LienReleased}, nil
}

// forwardRefund forwards the refund of a job whose lien or charge was
// forwarded, its amount converted by the rate ratio its charge was (zero:
// all that is left at the home bank); notHere is the bank's own answer,
// for a job that was not.
func (s *Server) forwardRefund(c *call, spec api.JobRefundRequest, notHere error) (lien.JobRefund, error) {
	home, ok, err := s.peers.HomedJob(c.r.Context(), spec.Machine, spec.ID)
	if err != nil || !ok {
		return lien.JobRefund{}, errors.Join(notHere, err)
	}
	places := s.ledger.Settings().Precision
	body := peer.JobOp{Project: home.Project, Machine: spec.Machine, JobID: spec.ID, Amount: peer.HomeRefund(spec.Amount, home, places), Description: spec.Description}
	t, err := s.forward(c, home, peer.OpRefund, body, spec.Amount)
	if err != nil {
		return lien.JobRefund{}, err
	}
	return lien.ForwardedRefund(spec.Amount, forwarded(home, t), places)
}

// jobOp is the body of a forwarded operation: the job, on the home
// project, its amount converted into the home bank's credits.
func (s *Server) jobOp(h *lien.HomedError) peer.JobOp {
	return peer.JobOp{Project: h.Home.Project, Machine: h.Job.Machine, JobID: h.Job.JobID, User: h.Job.User,
		Amount: peer.HomeAmount(h.Amount.Credits, h.Home, s.ledger.Settings().Precision)}
}

// forward sends a job's operation to its home bank and says how it
// answered: done, or an error naming the home bank and its reason. While
// the home bank cannot be reached, a release is accepted, and a lien or
// charge is accepted if the home's peer's away policy accepts it
// (peer.Registry.AwayAccepts); then it stays pending, and is sent when
// the bank is back. Else it is refused: a charge stays pending all the
// same (the job ran: its usage is owed); a lien sent and not answered is
// withdrawn (peer.Registry.Withdraw), so that nothing holds credits at
// home for a job that does not run, and one asked while the bank is known
// away is refused without being sent (outbox.Forward).
func (s *Server) forward(c *call, home ledger.Home, op peer.Op, body peer.JobOp, local decimal.Decimal) (peer.Transaction, error) {
	t, err := outbox.Forward(c.r.Context(), s.peers, &s.links, c.req, home, op, body, local, 0)
	// What a sending left undone is finished even if the scheduler has
	// given up meanwhile (often why the sending failed): a lien neither
	// accepted nor withdrawn would be sent later, and held at home for a
	// job that does not run.
	ctx := context.WithoutCancel(c.r.Context())
	if t.ID != "" && t.State == peer.StatePending && op.Owes() {
		accepted, aerr := s.peers.AwayAccepts(ctx, home)
		switch {
		case aerr != nil:
			return t, aerr
		case accepted:
			return t, nil
		case op == peer.OpLien:
			if t, aerr = s.peers.Withdraw(ctx, c.req.Actor, t.ID); aerr != nil {
				return t, aerr
			}
		}
	}
	switch {
	case t.State == peer.StateDone:
		return t, nil
	case t.State == peer.StateRefused:
		var refusal api.Error
		if jerr := json.Unmarshal(t.Answer, &refusal); jerr != nil {
			refusal = api.Error{Code: api.CodeInternal, Message: string(t.Answer)}
		}
		if t.NotSent {
			return t, api.Errorf(refusal.Code, "home bank %s cannot be reached for the %s of job %s (transaction %s refused here, not sent; a retry asks again once the bank is back): %s",
				home.Peer, op, body.JobID, t.ID, refusal.Message)
		}
		return t, api.Errorf(refusal.Code, "home bank %s refused the %s of job %s (transaction %s): %s", home.Peer, op, body.JobID, t.ID, refusal.Message)
	case t.ID == "":
		return t, err
	case !op.Owes():
		// A release or refund only gives credits back: accepted, and
		// sent when it can be.
		return t, nil
	case t.State == peer.StateWithdrawn:
		return t, api.Errorf(api.CodeUnavailable, "home bank %s cannot be reached for the %s of job %s (transaction %s withdrawn: it is not placed there; a retry asks again once the bank is back): %v",
			home.Peer, op, body.JobID, t.ID, err)
	}
	return t, api.Errorf(api.CodeUnavailable, "home bank %s cannot be reached for the %s of job %s (transaction %s, pending: it is sent when the bank is back): %v",
		home.Peer, op, body.JobID, t.ID, err)
}

// exchangeLien places the lien of a peer's job on a project homed here,
// after the withdrawals of the job's earlier liens that it names
// (peer.JobOp.Withdraws).
func (s *Server) exchangeLien(c *call, op peer.JobOp) (ledger.Lien, error) {
	return peer.Receive(c.r.Context(), s.ledger, c.req, c.client.Name, peer.OpLien, c.body, outbox.Refusals{}, func(w *ledger.Writer) (ledger.Lien, decimal.Decimal, error) {
		if err := s.mayTrace(c, peer.OpLien, op); err != nil {
			return ledger.Lien{}, decimal.Zero, err
		}
		for _, wd := range op.Withdrawals() {
			if err := peer.Withdrawn(w, c.client.Name, wd, outbox.Refusals{}, s.releaseWithdrawn(w, c.client.Name, wd)); err != nil {
				return ledger.Lien{}, decimal.Zero, err
			}
		}
		l, err := s.bank.HoldFor(w, op.JobRef(c.client.Name), op.Amount, op.Expires)
		return l, op.Amount, err
	})
}

// exchangeCharge charges a peer's job on a project homed here.
func (s *Server) exchangeCharge(c *call, op peer.JobOp) (lien.ChargeResult, error) {
	return peer.Receive(c.r.Context(), s.ledger, c.req, c.client.Name, peer.OpCharge, c.body, outbox.Refusals{}, func(w *ledger.Writer) (lien.ChargeResult, decimal.Decimal, error) {
		if err := s.mayTrace(c, peer.OpCharge, op); err != nil {
			return lien.ChargeResult{}, decimal.Zero, err
		}
		r, err := s.bank.ChargeFor(w, op.JobRef(c.client.Name), op.Amount, op.Final)
		return r, op.Amount, err
	})
}

// exchangeRelease releases the lien of a peer's job.
func (s *Server) exchangeRelease(c *call, op peer.JobOp) (ledger.Lien, error) {
	return peer.Receive(c.r.Context(), s.ledger, c.req, c.client.Name, peer.OpRelease, c.body, outbox.Refusals{}, func(w *ledger.Writer) (ledger.Lien, decimal.Decimal, error) {
		if err := s.mayTrace(c, peer.OpRelease, op); err != nil {
			return ledger.Lien{}, decimal.Zero, err
		}
		ref := op.JobRef(c.client.Name)
		l, err := s.bank.ReleaseFor(w, lien.Job{Machine: ref.Machine, ID: ref.JobID})
		if err == nil && l.Project != op.Project {
			err = forbidden(c.client, "release job %s: its lien is on %s, not %s", op.JobID, l.Project, op.Project)
		}
		return l, decimal.Zero, err
	})
}

// exchangeRefund refunds a peer's job's charges.
func (s *Server) exchangeRefund(c *call, op peer.JobOp) (lien.JobRefund, error) {
	return peer.Receive(c.r.Context(), s.ledger, c.req, c.client.Name, peer.OpRefund, c.body, outbox.Refusals{}, func(w *ledger.Writer) (lien.JobRefund, decimal.Decimal, error) {
		if err := s.mayTrace(c, peer.OpRefund, op); err != nil {
			return lien.JobRefund{}, decimal.Zero, err
		}
		r, err := s.bank.RefundFor(w, op.JobRef(c.client.Name), op.Amount, op.Description)
		return r, r.Refunded, err
	})
}

// exchangeWithdrawal withdraws a lien a peer forwarded here and then
// withdrew (peer.Withdrawn): its lien released if it was placed and is
// still the one it placed, else it is never placed. The job is the
// peer's own (its machine prefixed with the peer's name), so a withdrawal
// frees only what the peer's own lien held.
func (s *Server) exchangeWithdrawal(c *call, wd peer.Withdrawal) (peer.Withdrawal, error) {
	return peer.Receive(c.r.Context(), s.ledger, c.req, c.client.Name, peer.OpWithdraw, c.body, outbox.Refusals{}, func(w *ledger.Writer) (peer.Withdrawal, decimal.Decimal, error) {
		err := peer.Withdrawn(w, c.client.Name, wd, outbox.Refusals{}, s.releaseWithdrawn(w, c.client.Name, wd))
		return wd, decimal.Zero, err
	})
}

// releaseWithdrawn releases the lien of a peer's job that the lien
// transaction withdrawn (wd) placed at the time given, if it is still that
// one: active, on the same project, not placed again since.
func (s *Server) releaseWithdrawn(w *ledger.Writer, peerName string, wd peer.Withdrawal) func(placed time.Time) error {
	ref := wd.Lien.JobRef(peerName)
	return func(placed time.Time) error {
		l, ok, err := w.Tx().JobLien(ref.Machine, ref.JobID)
		if err != nil || !ok || l.State != ledger.LienActive || l.Project != ref.Project || !l.Created.Equal(placed) || !l.Charged.IsZero() {
			return err
		}
		_, err = s.bank.ReleaseFor(w, lien.Job{Machine: ref.Machine, ID: ref.JobID})
		return err
	}
}

// mayTrace refuses a peer a job's operation on a project its agreement
// does not name, or a body it could not have meant: within the change,
// so that the refusal is kept as the transaction's answer.
func (s *Server) mayTrace(c *call, op peer.Op, body peer.JobOp) error {
	if err := body.Check(op); err != nil {
		return err
	}
	if !slices.Contains(c.client.Scope, body.Project) {
		return forbidden(c.client, "%s job %s on %s: its agreement does not name it", op, body.JobID, body.Project)
	}
	return nil
}
