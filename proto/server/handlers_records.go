package server

import (
	"context"
	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/link"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
	"maps"
	"slices"
)

// Handlers of the bank's records: nodes, users, machines, the rate table
// and charge configuration, API clients. Users, machines, rates and
// configuration are the bank manager's (admin only, by the route table):
// they are shared by every account.

func (s *Server) nodes(c *call, q api.NodesQuery) (api.List[ledger.Node], error) {
	return readable(c.r.Context(), s, c, func(ctx context.Context) ([]ledger.Node, error) { return s.ledger.Nodes(c.r.Context(), q.Under) },
		func(r reach, n ledger.Node) bool { return r.node(n.Name) })
}

// accountNumbers are the numbers of the accounts the client reads, each
// counted among all the bank's accounts so that every client sees the
// same number.
func (s *Server) accountNumbers(c *call, _ api.NoQuery) (api.AccountNumbersResponse, error) {
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return api.AccountNumbersResponse{}, err
	}
	numbers, err := s.ledger.AccountNumbers(c.r.Context())
	maps.DeleteFunc(numbers, func(name string, _ uint64) bool { return !r.node(name) })
	return api.AccountNumbersResponse{Numbers: numbers}, err
}

func (s *Server) node(c *call, q api.NameQuery) (ledger.Node, error) {
	if err := s.requireReads(c.r.Context(), c.client, q.Name); err != nil {
		return ledger.Node{}, err
	}
	return s.ledger.Node(c.r.Context(), q.Name)
}

func (s *Server) createNode(c *call, spec api.NodeRequest) (ledger.Node, error) {
	if err := requireManagesBelow(c.client, "create", spec.Name); err != nil {
		return ledger.Node{}, err
	}
	return s.ledger.CreateNode(c.r.Context(), c.req, spec)
}

func (s *Server) modifyNode(c *call, m api.Modify[ledger.NodeChange]) (ledger.Node, error) {
	if err := requireManagesBelow(c.client, "change", m.Name); err != nil {
		return ledger.Node{}, err
	}
	return s.ledger.ModifyNode(c.r.Context(), c.req, m.Name, m.Change)
}

func (s *Server) deactivateNode(c *call, n api.NameRequest) (ledger.Node, error) {
	if err := requireManagesBelow(c.client, "deactivate", n.Name); err != nil {
		return ledger.Node{}, err
	}
	return s.ledger.DeactivateNode(c.r.Context(), c.req, n.Name)
}

func (s *Server) reactivateNode(c *call, n api.NameRequest) (ledger.Node, error) {
	if err := requireManagesBelow(c.client, "reactivate", n.Name); err != nil {
		return ledger.Node{}, err
	}
	return s.ledger.ReactivateNode(c.r.Context(), c.req, n.Name)
}

func (s *Server) users(c *call, _ api.NoQuery) (api.List[ledger.User], error) {
	return readable(c.r.Context(), s, c, s.ledger.Users, reach.user)
}

func (s *Server) addUser(c *call, spec api.UserRequest) (ledger.User, error) {
	return s.ledger.AddUser(c.r.Context(), c.req, spec)
}

// modifyUser changes a user: an admin's change, or a manager's change of
// the memberships of its subtrees (requireManagesMemberships).
func (s *Server) modifyUser(c *call, m api.Modify[ledger.UserChange]) (ledger.User, error) {
	if err := s.requireManagesMemberships(c.r.Context(), c.client, m.Name, m.Change); err != nil {
		return ledger.User{}, err
	}
	return s.ledger.ModifyUser(c.r.Context(), c.req, m.Name, m.Change)
}

// machines are no secret: every client may list them (a scheduler's
// command line picks the bank's only machine when none is named).
func (s *Server) machines(c *call, _ api.NoQuery) (api.List[ledger.Machine], error) {
	ms, err := s.ledger.Machines(c.r.Context())
	return api.ListOf(ms), err
}

func (s *Server) addMachine(c *call, spec api.MachineRequest) (ledger.Machine, error) {
	return s.ledger.AddMachine(c.r.Context(), c.req, spec)
}

func (s *Server) modifyMachine(c *call, m api.Modify[ledger.MachineChange]) (ledger.Machine, error) {
	return s.ledger.ModifyMachine(c.r.Context(), c.req, m.Name, m.Change)
}

// rates are the price list: every client may read them.
func (s *Server) rates(c *call, _ api.NoQuery) (charge.RateTable, error) {
	return s.bank.Rates(c.r.Context())
}

func (s *Server) setRates(c *call, t api.RatesRequest) (charge.RateTable, error) {
	return s.bank.SetRates(c.r.Context(), c.req, t)
}

func (s *Server) config(c *call, _ api.NoQuery) (lien.Config, error) {
	return s.bank.Config(c.r.Context())
}

func (s *Server) changeConfig(c *call, ch api.ConfigRequest) (lien.Config, error) {
	return s.bank.ChangeConfig(c.r.Context(), c.req, ch)
}

func (s *Server) clientList(c *call, _ api.NoQuery) (api.List[clients.Client], error) {
	list, err := s.clients.List(c.r.Context())
	for i := range list {
		list[i] = list[i].Public()
	}
	return api.ListOf(list), err
}

func (s *Server) addClient(c *call, cr api.ClientRequest) (api.NewKeyResponse, error) {
	return newKey(s.clients.Add(c.r.Context(), c.req, cr))
}

func (s *Server) rotateKey(c *call, n api.NameRequest) (api.NewKeyResponse, error) {
	return newKey(s.clients.Rotate(c.r.Context(), c.req, n.Name))
}

// newKey is the answer that hands a new key over, once.
func newKey(cl clients.Client, key auth.Key, err error) (api.NewKeyResponse, error) {
	if err != nil {
		return api.NewKeyResponse{}, err
	}
	return api.NewKeyResponse{Client: cl.Public(), KeyFile: string(key.KeyFile())}, nil
}

func (s *Server) revokeKey(c *call, rr api.RevokeRequest) (clients.Client, error) {
	cl, err := s.clients.Revoke(c.r.Context(), c.req, rr.Name, rr.KeyID)
	return cl.Public(), err
}

func (s *Server) peerList(c *call, _ api.NoQuery) (api.List[peer.Peer], error) {
	list, err := s.peers.List(c.r.Context())
	return api.ListOf(list), err
}

func (s *Server) addPeer(c *call, pr api.PeerRequest) (api.NewPeerResponse, error) {
	var theirs *auth.Key
	if pr.KeyFile != "" {
		k, err := auth.ParseKeyFile([]byte(pr.KeyFile))
		if err != nil {
			return api.NewPeerResponse{}, api.Errorf(api.CodeInvalid, "peer %s: %v", pr.Name, err)
		}
		theirs = &k
	}
	p, key, err := s.peers.Add(c.r.Context(), c.req, pr.Spec, theirs)
	if err != nil {
		return api.NewPeerResponse{}, err
	}
	return api.NewPeerResponse{Peer: p, KeyFile: string(key.KeyFile())}, nil
}

func (s *Server) setPeerKey(c *call, pr api.PeerKeyRequest) (peer.Peer, error) {
	k, err := auth.ParseKeyFile([]byte(pr.KeyFile))
	if err != nil {
		return peer.Peer{}, api.Errorf(api.CodeInvalid, "peer %s: %v", pr.Name, err)
	}
	return s.peers.SetKey(c.r.Context(), c.req, pr.Name, k)
}

func (s *Server) removePeer(c *call, n api.NameRequest) (peer.Peer, error) {
	return s.peers.Remove(c.r.Context(), c.req, n.Name)
}

func (s *Server) modifyPeer(c *call, m api.PeerModifyRequest) (peer.Peer, error) {
	return s.peers.Modify(c.r.Context(), c.req, m.Name, m.Change)
}

func (s *Server) peerDeposit(c *call, pd api.PeerDepositRequest) (peer.Transaction, error) {
	return s.peers.Deposit(c.r.Context(), c.req, pd.Peer, pd.Deposit)
}

func (s *Server) peerTransactions(c *call, q api.PeerTransactionsQuery) (api.List[peer.Transaction], error) {
	list, err := s.peers.Transactions(c.r.Context(), q.Pending)
	return api.ListOf(list), err
}

// exchangeDeposit applies a peer bank's deposit, under the id of its
// transaction (the request id): into an account its agreement names only.
func (s *Server) exchangeDeposit(c *call, spec api.DepositRequest) (ledger.Receipt, error) {
	if !slices.Contains(c.client.Scope, spec.Account) {
		return ledger.Receipt{}, forbidden(c.client, "deposit into %s: its agreement does not name it", spec.Account)
	}
	return peer.ReceiveDeposit(c.r.Context(), s.ledger, c.req, c.client.Name, c.body, outbox.Refusals{}, spec)
}

// exchangeUsage records a site's report of the usage of the allocations
// this bank granted there, under the id of its transaction.
func (s *Server) exchangeUsage(c *call, u peer.UsageReport) (peer.ReceivedUsage, error) {
	return peer.ReceiveUsage(c.r.Context(), s.ledger, c.req, c.client.Name, c.body, outbox.Refusals{}, u)
}

// exchangeTransactions answers a peer bank's question: this bank's
// records of the transactions between the two, and only those, whatever
// the peer asks.
func (s *Server) exchangeTransactions(c *call, q api.ExchangeQuery) (api.List[peer.Exchanged], error) {
	list, err := s.peers.Exchanged(c.r.Context(), c.client.Name, q.From, q.To)
	return api.ListOf(list), err
}

// peerReconcile compares this bank's records of the transactions with a
// peer with the peer's, asked of it.
func (s *Server) peerReconcile(c *call, q api.PeerReconcileQuery) (peer.Reconciliation, error) {
	return link.Reconcile(c.r.Context(), s.peers, q.Peer, q.From, q.To)
}

// peerStatement is what this bank and a peer did for each other in a
// period, from this bank's records.
func (s *Server) peerStatement(c *call, q api.PeerStatementQuery) (peer.Statement, error) {
	p, err := peer.ParsePeriod(q.Period)
	if err != nil {
		return peer.Statement{}, err
	}
	return s.peers.Statement(c.r.Context(), q.Peer, p)
}
