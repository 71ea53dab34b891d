package server

import (
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// The handlers: decode, check the scope, ask the bank. Each answers with
// the bank's own result type (see package api).

func (s *Server) balances(*call) (any, error) {
	all, err := s.ledger.Balances(time.Time{})
	if all == nil {
		all = []ledger.NodeBalance{} // [] rather than null on the wire
	}
	return api.BalancesResponse{Balances: all}, err
}

func (s *Server) balance(c *call) (any, error) {
	node, err := c.query("node")
	if err != nil {
		return nil, err
	}
	if err := s.requireReads(c.client, node); err != nil {
		return nil, err
	}
	return s.ledger.BalanceAt(node, time.Time{})
}

func (s *Server) available(c *call) (any, error) {
	project, err := c.query("project")
	if err != nil {
		return nil, err
	}
	if err := s.requireReads(c.client, project); err != nil {
		return nil, err
	}
	amount, err := s.ledger.Available(project)
	return api.AvailableResponse{Project: project, Available: amount}, err
}

func (s *Server) deposit(c *call) (any, error) {
	var spec api.DepositRequest
	if err := c.decode(&spec); err != nil {
		return nil, err
	}
	if err := requireManages(c.client, "deposit into", spec.Account); err != nil {
		return nil, err
	}
	return s.ledger.Deposit(c.req, spec)
}

func (s *Server) transfer(c *call) (any, error) {
	var spec api.TransferRequest
	if err := c.decode(&spec); err != nil {
		return nil, err
	}
	if err := requireManages(c.client, "transfer from", spec.From); err != nil {
		return nil, err
	}
	if err := requireManages(c.client, "transfer to", spec.To); err != nil {
		return nil, err
	}
	return s.ledger.Transfer(c.req, spec)
}

func (s *Server) quote(c *call) (any, error) {
	var spec api.QuoteRequest
	if err := c.decode(&spec); err != nil {
		return nil, err
	}
	if err := requireSchedules(c.client, "quote on", spec.Machine); err != nil {
		return nil, err
	}
	return s.bank.Quote(spec)
}

func (s *Server) placeLien(c *call) (any, error) {
	var spec api.LienRequest
	if err := c.decode(&spec); err != nil {
		return nil, err
	}
	return s.place(c.client, c.req, spec)
}

func (s *Server) releaseLien(c *call) (any, error) {
	var job api.ReleaseRequest
	if err := c.decode(&job); err != nil {
		return nil, err
	}
	return s.release(c.client, c.req, job)
}

func (s *Server) charge(c *call) (any, error) {
	var spec api.ChargeRequest
	if err := c.decode(&spec); err != nil {
		return nil, err
	}
	return s.chargeJob(c.client, c.req, spec)
}

// place, release and chargeJob are a scheduler's changes after decoding:
// the scope check and the bank's call, shared by their endpoints and the
// items of a batch so that both check the same.

func (s *Server) place(cl clients.Client, req ledger.Request, spec api.LienRequest) (lien.LienResult, error) {
	if err := requireSchedules(cl, "place a lien on", spec.Machine); err != nil {
		return lien.LienResult{}, err
	}
	return s.bank.Place(req, spec)
}

func (s *Server) release(cl clients.Client, req ledger.Request, job api.ReleaseRequest) (ledger.Lien, error) {
	if err := requireSchedules(cl, "release a lien on", job.Machine); err != nil {
		return ledger.Lien{}, err
	}
	return s.bank.Release(req, job)
}

func (s *Server) chargeJob(cl clients.Client, req ledger.Request, spec api.ChargeRequest) (lien.ChargeResult, error) {
	if err := requireSchedules(cl, "charge a job on", spec.Machine); err != nil {
		return lien.ChargeResult{}, err
	}
	return s.bank.Charge(req, spec)
}
