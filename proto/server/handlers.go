package server

import (
	"fmt"
	"io"
	"slices"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// The handlers: check the scope of the decoded input, ask the bank. Each
// answers with the bank's own result type, or an api.List of them (see
// package api). This file has the balances, reports and funds; the
// records of the bank (nodes, users, machines, rates, clients) are in
// handlers_records.go, jobs in handlers_jobs.go.

func (s *Server) settings(c *call, _ api.NoQuery) (api.Settings, error) {
	archived, err := s.ledger.ArchivedBefore(c.r.Context())
	return api.Settings{Settings: s.ledger.Settings(), Created: s.ledger.Created(), Now: s.ledger.Now(), ArchivedBefore: archived}, err
}

// balances are every account's for a client that reads every node, and
// otherwise those of the nodes at the top of its reach: a manager's scope,
// a user's projects.
func (s *Server) balances(c *call, q api.BalancesQuery) (api.BalancesResponse, error) {
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return api.BalancesResponse{}, err
	}
	balances, balance := s.ledger.Balances, s.ledger.BalanceAt
	if q.AllUpcoming {
		balances, balance = s.ledger.BalancesWithUpcoming, s.ledger.BalanceWithUpcoming
	}
	var all []ledger.NodeBalance
	if r.roots == nil {
		all, err = balances(c.r.Context(), q.At)
	} else {
		for _, root := range slices.Compact(slices.Sorted(slices.Values(r.roots))) {
			nb, err := balance(c.r.Context(), root, q.At)
			if err != nil {
				return api.BalancesResponse{}, err
			}
			all = append(all, nb)
		}
	}
	if all == nil {
		all = []ledger.NodeBalance{} // [] rather than null on the wire
	}
	return api.BalancesResponse{Balances: all}, err
}

func (s *Server) balance(c *call, q api.BalanceQuery) (ledger.NodeBalance, error) {
	if err := s.requireReads(c.r.Context(), c.client, q.Node); err != nil {
		return ledger.NodeBalance{}, err
	}
	if q.AllUpcoming {
		return s.ledger.BalanceWithUpcoming(c.r.Context(), q.Node, q.At)
	}
	return s.ledger.BalanceAt(c.r.Context(), q.Node, q.At)
}

func (s *Server) available(c *call, q api.AvailableQuery) (api.AvailableResponse, error) {
	if err := s.requireReads(c.r.Context(), c.client, q.Project); err != nil {
		return api.AvailableResponse{}, err
	}
	amount, err := s.ledger.Available(c.r.Context(), q.Project)
	return api.AvailableResponse{Project: q.Project, Available: amount}, err
}

func (s *Server) shares(c *call, q api.SharesQuery) (ledger.AccountShares, error) {
	if err := s.requireReads(c.r.Context(), c.client, q.Account); err != nil {
		return ledger.AccountShares{}, err
	}
	with := make([]ledger.QuotaChange, len(q.With))
	for i, w := range q.With {
		var err error
		if with[i], err = ledger.ParseQuotaChange(w); err != nil {
			return ledger.AccountShares{}, err
		}
	}
	return s.ledger.Shares(c.r.Context(), q.Account, with...)
}

// preempt answers what to preempt for a lien on a project the client
// reads; the victims of projects it does not read are hidden (api's ⁸).
func (s *Server) preempt(c *call, q api.PreemptQuery) (ledger.Preemption, error) {
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return ledger.Preemption{}, err
	}
	if err := r.require(q.Project); err != nil {
		return ledger.Preemption{}, err
	}
	amount, err := ledger.ParseAmount(q.Amount, s.ledger.Settings().Precision)
	if err != nil {
		return ledger.Preemption{}, fmt.Errorf("%s: amount: %w", api.PathPreempt, err)
	}
	p, err := s.ledger.Preempt(c.r.Context(), q.Project, q.Machine, amount)
	for k, v := range p.Victims {
		if !r.node(v.Project) {
			p.Victims[k] = ledger.Victim{Held: v.Held, Hidden: true}
		}
	}
	return p, err
}

func (s *Server) fairShare(c *call, q api.FairShareQuery) (api.List[ledger.FairShareNode], error) {
	if err := s.requireReads(c.r.Context(), c.client, q.Account); err != nil {
		return api.List[ledger.FairShareNode]{}, err
	}
	nodes, err := s.ledger.FairShare(c.r.Context(), q.Account, q.HalfLife, q.Compensation)
	return api.ListOf(nodes), err
}

// forecast is the forecast of the node asked for, or of every node the
// client reads.
func (s *Server) forecast(c *call, q api.ForecastQuery) (api.List[forecast.Forecast], error) {
	ctx := c.r.Context()
	r, err := s.reachOf(ctx, c.client)
	if err != nil {
		return api.List[forecast.Forecast]{}, err
	}
	names := []string{q.Node}
	if q.Node != "" {
		if err := r.require(q.Node); err != nil {
			return api.List[forecast.Forecast]{}, err
		}
	} else {
		nodes, err := s.ledger.Nodes(ctx, "")
		if err != nil {
			return api.List[forecast.Forecast]{}, err
		}
		names = []string{}
		for _, n := range nodes {
			if r.node(n.Name) {
				names = append(names, n.Name)
			}
		}
	}
	fs, err := forecast.Of(ctx, s.ledger, names)
	return api.ListOf(fs), err
}

func (s *Server) statement(c *call, q api.StatementQuery) (api.Statement, error) {
	if err := s.requireReads(c.r.Context(), c.client, q.Account); err != nil {
		return api.Statement{}, err
	}
	st, err := s.ledger.Statement(c.r.Context(), q.Account, q.From, q.To, q.Summarize)
	if err != nil {
		return api.Statement{}, err
	}
	spent, err := peer.SpentAt(c.r.Context(), s.ledger, q.Account, q.From, q.To)
	return api.Statement{Statement: st, SpentAtPeers: spent}, err
}

// journal is the whole journal for an admin. Another client names a node
// it reads and gets the entries about that node's subtree: those that name
// a node in it or change an allocation of it (not those that merely refer
// to it, such as a client record named like the node).
func (s *Server) journal(c *call, q api.JournalQuery) (api.List[ledger.Entry], error) {
	f := ledger.JournalFilter{Node: q.Node, Job: q.Job, Machine: q.Machine, From: q.Since, To: q.Until}
	for _, k := range q.Kinds {
		kind, err := ledger.ParseKind(k)
		if err != nil {
			return api.List[ledger.Entry]{}, err
		}
		f.Kinds = append(f.Kinds, kind)
	}
	if q.Limit < 0 {
		return api.List[ledger.Entry]{}, api.Errorf(api.CodeInvalid, "%s: limit %d is negative", api.PathJournal, q.Limit)
	}
	scoped := c.client.Role != clients.RoleAdmin
	if scoped {
		if q.Node == "" {
			return api.List[ledger.Entry]{}, forbidden(c.client, "read the whole journal: name a node it reads (node=NAME)")
		}
		if err := s.requireReads(c.r.Context(), c.client, q.Node); err != nil {
			return api.List[ledger.Entry]{}, err
		}
	}
	entries, err := s.ledger.Journal(c.r.Context(), f)
	if scoped {
		entries = filter(entries, func(e ledger.Entry) bool { return aboutSubtree(e, q.Node) })
	}
	if q.Limit > 0 && len(entries) > q.Limit {
		entries = entries[len(entries)-q.Limit:]
	}
	return api.ListOf(entries), err
}

// aboutSubtree reports whether an entry names a node of root's subtree or
// changes one of its allocations.
func aboutSubtree(e ledger.Entry, root string) bool {
	return ledger.InSubtree(e.Node, root) || slices.ContainsFunc(e.Deltas, func(d ledger.Delta) bool { return ledger.InSubtree(d.Account, root) })
}

func (s *Server) audit(c *call, q api.AuditQuery) (ledger.AuditReport, error) {
	noDeadline(c.w)
	return s.runAudit(c.r.Context(), q.Full)
}

// backup answers with a consistent copy of the database file, made while
// the bank is in use.
func (s *Server) backup(c *call, _ api.NoQuery) (stream, error) {
	noDeadline(c.w)
	return func(w io.Writer) error {
		_, err := s.ledger.Backup(c.r.Context(), w)
		return err
	}, nil
}

func (s *Server) deposit(c *call, spec api.DepositRequest) (ledger.Receipt, error) {
	if err := requireManages(c.client, "deposit into", spec.Account); err != nil {
		return ledger.Receipt{}, err
	}
	return s.ledger.Deposit(c.r.Context(), c.req, spec)
}

func (s *Server) withdraw(c *call, spec api.WithdrawRequest) (ledger.Receipt, error) {
	if err := requireManages(c.client, "withdraw from", spec.Account); err != nil {
		return ledger.Receipt{}, err
	}
	return s.ledger.Withdraw(c.r.Context(), c.req, spec)
}

// modifyAllocation changes an allocation of an account the client
// manages: the allocation is read first, for its account.
func (s *Server) modifyAllocation(c *call, m api.AllocationModifyRequest) (ledger.Allocation, error) {
	a, err := s.ledger.Allocation(c.r.Context(), m.Allocation)
	if err != nil {
		return ledger.Allocation{}, err
	}
	if err := requireManages(c.client, fmt.Sprintf("change allocation %d of", m.Allocation), a.Account); err != nil {
		return ledger.Allocation{}, err
	}
	return s.ledger.ModifyAllocation(c.r.Context(), c.req, m.Allocation, m.Change)
}

func (s *Server) transfer(c *call, spec api.TransferRequest) (ledger.Receipt, error) {
	if err := requireManages(c.client, "transfer from", spec.From); err != nil {
		return ledger.Receipt{}, err
	}
	if err := requireManages(c.client, "transfer to", spec.To); err != nil {
		return ledger.Receipt{}, err
	}
	return s.ledger.Transfer(c.r.Context(), c.req, spec)
}

// webLink is a one-time link to the web page that signs in as the client.
func (s *Server) webLink(c *call, _ api.WebLinkRequest) (api.WebLinkResponse, error) {
	return s.page.MakeLink(c.r.Context(), c.client)
}
