package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/schedule"
)

// The methods of the endpoints, one each, named and typed as the bank's
// own methods are. A time.Time that is zero means "now" (or "not given");
// a change's requestID "" means a random one.

// Settings are the bank's settings and the server's clock.
func (c *Client) Settings(ctx context.Context) (api.Settings, error) {
	return get[api.Settings](ctx, c, api.PathSettings, api.NoQuery{})
}

// Balance is a node's balance now.
func (c *Client) Balance(ctx context.Context, node string) (ledger.NodeBalance, error) {
	return c.BalanceAt(ctx, node, time.Time{})
}

// BalanceAt is a node's balance at a time.
func (c *Client) BalanceAt(ctx context.Context, node string, at time.Time) (ledger.NodeBalance, error) {
	return get[ledger.NodeBalance](ctx, c, api.PathBalance, api.BalanceQuery{Node: node, At: at})
}

// BalanceWithUpcoming is BalanceAt listing every allocation yet to start.
func (c *Client) BalanceWithUpcoming(ctx context.Context, node string, at time.Time) (ledger.NodeBalance, error) {
	return get[ledger.NodeBalance](ctx, c, api.PathBalance, api.BalanceQuery{Node: node, At: at, AllUpcoming: true})
}

// Balances are the balances the client reads (every account's for an
// admin or a scheduler) at a time.
func (c *Client) Balances(ctx context.Context, at time.Time) ([]ledger.NodeBalance, error) {
	b, err := get[api.BalancesResponse](ctx, c, api.PathBalances, api.BalancesQuery{At: at})
	return b.Balances, err
}

// BalancesWithUpcoming is Balances listing every allocation yet to start.
func (c *Client) BalancesWithUpcoming(ctx context.Context, at time.Time) ([]ledger.NodeBalance, error) {
	b, err := get[api.BalancesResponse](ctx, c, api.PathBalances, api.BalancesQuery{At: at, AllUpcoming: true})
	return b.Balances, err
}

// Available is what a new lien on the project may take now.
func (c *Client) Available(ctx context.Context, project string) (decimal.Decimal, error) {
	a, err := get[api.AvailableResponse](ctx, c, api.PathAvailable, api.AvailableQuery{Project: project})
	return a.Available, err
}

// Preempt is what to preempt so that a lien of amount on project fits,
// on machine (any machine when empty).
func (c *Client) Preempt(ctx context.Context, project, machine string, amount decimal.Decimal) (ledger.Preemption, error) {
	return get[ledger.Preemption](ctx, c, api.PathPreempt, api.PreemptQuery{Project: project, Machine: machine, Amount: amount.String()})
}

// Shares is an account's HFS split now, or as it would be with the
// quotas proposed (a dry run: nothing changes).
func (c *Client) Shares(ctx context.Context, account string, with ...ledger.QuotaChange) (ledger.AccountShares, error) {
	return get[ledger.AccountShares](ctx, c, api.PathShares, api.SharesQuery{Account: account, With: ledger.QuotaTexts(with)})
}

// FairShare is an account's share tree now.
func (c *Client) FairShare(ctx context.Context, account string, halfLife time.Duration, compensation float64) ([]ledger.FairShareNode, error) {
	return items(get[api.List[ledger.FairShareNode]](ctx, c, api.PathFairShare,
		api.FairShareQuery{Account: account, HalfLife: halfLife, Compensation: compensation}))
}

// Forecast is the forecast of node now, or with node "" of every node
// the client reads.
func (c *Client) Forecast(ctx context.Context, node string) ([]forecast.Forecast, error) {
	return items(get[api.List[forecast.Forecast]](ctx, c, api.PathForecast, api.ForecastQuery{Node: node}))
}

// Statement is an account's statement for [from, to).
func (c *Client) Statement(ctx context.Context, account string, from, to time.Time, summarize bool) (api.Statement, error) {
	return get[api.Statement](ctx, c, api.PathStatement, api.StatementQuery{Account: account, From: from, To: to, Summarize: summarize})
}

// Journal lists the journal entries the filter selects.
func (c *Client) Journal(ctx context.Context, f ledger.JournalFilter) ([]ledger.Entry, error) {
	q := api.JournalQuery{Node: f.Node, Job: f.Job, Machine: f.Machine, Since: f.From, Until: f.To, Limit: f.Limit}
	for _, k := range f.Kinds {
		q.Kinds = append(q.Kinds, string(k))
	}
	return items(get[api.List[ledger.Entry]](ctx, c, api.PathJournal, q))
}

// Audit replays the server's journal and compares it with its state.
func (c *Client) Audit(ctx context.Context, opts ledger.AuditOptions) (ledger.AuditReport, error) {
	var rep ledger.AuditReport
	err := c.doLong(ctx, http.MethodGet, api.PathAudit, api.EncodeQuery(api.AuditQuery{Full: opts.Full}), &rep)
	return rep, err
}

// Backup writes a consistent copy of the server's database file to w and
// returns its size. A transfer cut short is an error; the copy should
// still be audited before it is trusted (ingot backup does).
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	counted := &progress.Writer{W: w}
	err := c.doLong(ctx, http.MethodGet, api.PathBackup, nil, counted)
	return counted.N(), err
}

// Nodes lists the nodes whose names start with under.
func (c *Client) Nodes(ctx context.Context, under string) ([]ledger.Node, error) {
	return items(get[api.List[ledger.Node]](ctx, c, api.PathNodes, api.NodesQuery{Under: under}))
}

// AccountNumbers are the numbers of the accounts the client reads.
func (c *Client) AccountNumbers(ctx context.Context) (map[string]uint64, error) {
	r, err := get[api.AccountNumbersResponse](ctx, c, api.PathAccountNumbers, api.NoQuery{})
	return r.Numbers, err
}

// Node is one node.
func (c *Client) Node(ctx context.Context, name string) (ledger.Node, error) {
	return get[ledger.Node](ctx, c, api.PathNode, api.NameQuery{Name: name})
}

// CreateNode creates an account or a project.
func (c *Client) CreateNode(ctx context.Context, requestID string, spec api.NodeRequest) (ledger.Node, error) {
	return post[ledger.Node](ctx, c, api.PathNodes, requestID, spec)
}

// ModifyNode changes a node.
func (c *Client) ModifyNode(ctx context.Context, requestID, name string, change ledger.NodeChange) (ledger.Node, error) {
	return post[ledger.Node](ctx, c, api.PathNodeModify, requestID, api.Modify[ledger.NodeChange]{Name: name, Change: change})
}

// DeactivateNode deactivates a node and its subtree.
func (c *Client) DeactivateNode(ctx context.Context, requestID, name string) (ledger.Node, error) {
	return post[ledger.Node](ctx, c, api.PathNodeDeactivate, requestID, api.NameRequest{Name: name})
}

// ReactivateNode reactivates a deactivated node.
func (c *Client) ReactivateNode(ctx context.Context, requestID, name string) (ledger.Node, error) {
	return post[ledger.Node](ctx, c, api.PathNodeReactivate, requestID, api.NameRequest{Name: name})
}

// Users lists the users the client reads.
func (c *Client) Users(ctx context.Context) ([]ledger.User, error) {
	return items(get[api.List[ledger.User]](ctx, c, api.PathUsers, api.NoQuery{}))
}

// AddUser adds a user.
func (c *Client) AddUser(ctx context.Context, requestID string, spec api.UserRequest) (ledger.User, error) {
	return post[ledger.User](ctx, c, api.PathUsers, requestID, spec)
}

// ModifyUser changes a user.
func (c *Client) ModifyUser(ctx context.Context, requestID, name string, change ledger.UserChange) (ledger.User, error) {
	return post[ledger.User](ctx, c, api.PathUserModify, requestID, api.Modify[ledger.UserChange]{Name: name, Change: change})
}

// Machines lists the machines.
func (c *Client) Machines(ctx context.Context) ([]ledger.Machine, error) {
	return items(get[api.List[ledger.Machine]](ctx, c, api.PathMachines, api.NoQuery{}))
}

// AddMachine adds a machine.
func (c *Client) AddMachine(ctx context.Context, requestID string, spec api.MachineRequest) (ledger.Machine, error) {
	return post[ledger.Machine](ctx, c, api.PathMachines, requestID, spec)
}

// ModifyMachine changes a machine.
func (c *Client) ModifyMachine(ctx context.Context, requestID, name string, change ledger.MachineChange) (ledger.Machine, error) {
	return post[ledger.Machine](ctx, c, api.PathMachineModify, requestID, api.Modify[ledger.MachineChange]{Name: name, Change: change})
}

// Deposit deposits credits.
func (c *Client) Deposit(ctx context.Context, requestID string, d api.DepositRequest) (ledger.Receipt, error) {
	return post[ledger.Receipt](ctx, c, api.PathDeposits, requestID, d)
}

// Withdraw takes credits out of an account.
func (c *Client) Withdraw(ctx context.Context, requestID string, w api.WithdrawRequest) (ledger.Receipt, error) {
	return post[ledger.Receipt](ctx, c, api.PathWithdrawals, requestID, w)
}

// Transfer moves credits between accounts.
func (c *Client) Transfer(ctx context.Context, requestID string, t api.TransferRequest) (ledger.Receipt, error) {
	return post[ledger.Receipt](ctx, c, api.PathTransfers, requestID, t)
}

// Rates is the rate table in force.
func (c *Client) Rates(ctx context.Context) (charge.RateTable, error) {
	return get[charge.RateTable](ctx, c, api.PathRates, api.NoQuery{})
}

// SetRates replaces the rate table.
func (c *Client) SetRates(ctx context.Context, requestID string, t api.RatesRequest) (charge.RateTable, error) {
	return post[charge.RateTable](ctx, c, api.PathRates, requestID, t)
}

// Config is the charge configuration in force.
func (c *Client) Config(ctx context.Context) (lien.Config, error) {
	return get[lien.Config](ctx, c, api.PathConfig, api.NoQuery{})
}

// ChangeConfig changes one setting of the charge configuration.
func (c *Client) ChangeConfig(ctx context.Context, requestID string, ch api.ConfigRequest) (lien.Config, error) {
	return post[lien.Config](ctx, c, api.PathConfig, requestID, ch)
}

// Quote prices a job.
func (c *Client) Quote(ctx context.Context, q api.QuoteRequest) (lien.QuoteResult, error) {
	var r lien.QuoteResult
	err := c.do(ctx, http.MethodPost, api.PathQuotes, nil, "", q, &r)
	return r, err
}

// Guarantee makes a guaranteed quote.
func (c *Client) Guarantee(ctx context.Context, requestID string, spec api.QuoteRequest, expires time.Time, uses int) (lien.StoredQuote, error) {
	return post[lien.StoredQuote](ctx, c, api.PathGuarantees, requestID, api.GuaranteeRequest{QuoteSpec: spec, Expires: expires, Uses: uses})
}

// Quotes lists the guaranteed quotes the client reads.
func (c *Client) Quotes(ctx context.Context) ([]lien.StoredQuote, error) {
	return items(get[api.List[lien.StoredQuote]](ctx, c, api.PathQuotes, api.NoQuery{}))
}

// PlaceLien places a job's lien.
func (c *Client) PlaceLien(ctx context.Context, requestID string, l api.LienRequest) (lien.LienResult, error) {
	return post[lien.LienResult](ctx, c, api.PathLiens, requestID, l)
}

// ExtendLien raises the wallclock limit of a job's lien.
func (c *Client) ExtendLien(ctx context.Context, requestID string, job lien.Job, wallclockLimitSeconds int64) (lien.LienResult, error) {
	return post[lien.LienResult](ctx, c, api.PathExtend, requestID, api.ExtendRequest{Job: job, WallclockLimitSeconds: wallclockLimitSeconds})
}

// ReleaseLien releases a job's lien.
func (c *Client) ReleaseLien(ctx context.Context, requestID string, job api.ReleaseRequest) (ledger.Lien, error) {
	return post[ledger.Lien](ctx, c, api.PathRelease, requestID, job)
}

// Sweep marks the liens past their expiry as expired.
func (c *Client) Sweep(ctx context.Context, requestID string) ([]ledger.Lien, error) {
	return items(post[api.List[ledger.Lien]](ctx, c, api.PathSweep, requestID, api.SweepRequest{}))
}

// Liens lists the active liens (all with all) the client reads, of a
// node's subtree when node is not empty.
func (c *Client) Liens(ctx context.Context, node string, all bool) ([]ledger.Lien, error) {
	return items(get[api.List[ledger.Lien]](ctx, c, api.PathLiens, api.LiensQuery{Node: node, All: all}))
}

// JobLien is the newest lien of a job.
func (c *Client) JobLien(ctx context.Context, job lien.Job) (ledger.Lien, error) {
	return get[ledger.Lien](ctx, c, api.PathLien, api.JobQuery{Machine: job.Machine, JobID: job.ID})
}

// Charge charges a job.
func (c *Client) Charge(ctx context.Context, requestID string, ch api.ChargeRequest) (lien.ChargeResult, error) {
	return post[lien.ChargeResult](ctx, c, api.PathCharges, requestID, ch)
}

// Charges lists a job's charges that the client reads.
func (c *Client) Charges(ctx context.Context, job lien.Job) ([]ledger.Charge, error) {
	return items(get[api.List[ledger.Charge]](ctx, c, api.PathCharges, api.ChargesQuery{Machine: job.Machine, JobID: job.ID}))
}

// FindCharges lists the charges f picks that the client reads.
func (c *Client) FindCharges(ctx context.Context, f lien.ChargeFilter) ([]ledger.Charge, error) {
	q := api.ChargesQuery{Node: f.Node, User: f.User, Machine: f.Machine, Since: f.Since, Until: f.Until}
	return items(get[api.List[ledger.Charge]](ctx, c, api.PathCharges, q))
}

// Usage asks for a usage report.
func (c *Client) Usage(ctx context.Context, q api.UsageQuery) ([]lien.UsageRow, error) {
	return items(get[api.List[lien.UsageRow]](ctx, c, api.PathUsage, q))
}

// Refund returns credits of a charge.
func (c *Client) Refund(ctx context.Context, requestID string, r api.RefundRequest) (ledger.Charge, error) {
	return post[ledger.Charge](ctx, c, api.PathRefunds, requestID, r)
}

// ModifyAllocation changes an allocation's terms.
func (c *Client) ModifyAllocation(ctx context.Context, requestID string, id uint64, change ledger.AllocationChange) (ledger.Allocation, error) {
	return post[ledger.Allocation](ctx, c, api.PathAllocationModify, requestID, api.AllocationModifyRequest{Allocation: id, Change: change})
}

// Contacts are the contacts the client reads (its own, or every one for
// an admin).
func (c *Client) Contacts(ctx context.Context) ([]digest.Contact, error) {
	return items(get[api.List[digest.Contact]](ctx, c, api.PathContacts, api.NoQuery{}))
}

// SetContact changes a bank user's contact.
func (c *Client) SetContact(ctx context.Context, requestID, user string, change digest.ContactChange) (digest.Contact, error) {
	return post[digest.Contact](ctx, c, api.PathContacts, requestID, api.ContactRequest{Name: user, Change: change})
}

// Notify has the server send the digests due now (dryRun: say what they
// would be).
func (c *Client) Notify(ctx context.Context, dryRun bool) ([]digest.Digest, error) {
	var l api.List[digest.Digest]
	err := c.do(ctx, http.MethodPost, api.PathNotify, nil, "", api.NotifyRequest{DryRun: dryRun}, &l)
	return l.Items, err
}

// Schedules are the allocation schedules of the accounts the client reads.
func (c *Client) Schedules(ctx context.Context) ([]schedule.Schedule, error) {
	return items(get[api.List[schedule.Schedule]](ctx, c, api.PathSchedules, api.NoQuery{}))
}

// AddSchedule makes a new allocation schedule.
func (c *Client) AddSchedule(ctx context.Context, requestID string, spec schedule.Spec) (schedule.Schedule, error) {
	return post[schedule.Schedule](ctx, c, api.PathSchedules, requestID, spec)
}

// ModifySchedule changes the periods of a schedule not yet made.
func (c *Client) ModifySchedule(ctx context.Context, requestID string, id uint64, change schedule.Change) (schedule.Schedule, error) {
	return post[schedule.Schedule](ctx, c, api.PathScheduleModify, requestID, api.ScheduleModifyRequest{Schedule: id, Change: change})
}

// CancelSchedule stops a schedule.
func (c *Client) CancelSchedule(ctx context.Context, requestID string, id uint64) (schedule.Schedule, error) {
	return post[schedule.Schedule](ctx, c, api.PathScheduleCancel, requestID, api.ScheduleCancelRequest{Schedule: id})
}

// Upcoming are the periods to come before until of the schedules of
// account ("": of every account the client reads).
func (c *Client) Upcoming(ctx context.Context, account string, until time.Time) ([]schedule.Period, error) {
	return items(get[api.List[schedule.Period]](ctx, c, api.PathUpcoming, api.UpcomingQuery{Account: account, Until: until}))
}

// MoveLienEnd moves the end of a job's lien.
func (c *Client) MoveLienEnd(ctx context.Context, requestID string, job lien.Job, end time.Time) (ledger.Lien, error) {
	return post[ledger.Lien](ctx, c, api.PathLienModify, requestID, api.LienModifyRequest{Job: job, End: end})
}

// RefundJob returns credits of a job's charges, newest first.
func (c *Client) RefundJob(ctx context.Context, requestID string, spec lien.JobRefundSpec) (lien.JobRefund, error) {
	return post[lien.JobRefund](ctx, c, api.PathJobRefunds, requestID, spec)
}

// AddReservation registers a chargeable reservation.
func (c *Client) AddReservation(ctx context.Context, requestID string, r api.ReservationRequest) (lien.Reservation, error) {
	return post[lien.Reservation](ctx, c, api.PathReservations, requestID, r)
}

// Reservations lists the reservations the client reads.
func (c *Client) Reservations(ctx context.Context) ([]lien.Reservation, error) {
	return items(get[api.List[lien.Reservation]](ctx, c, api.PathReservations, api.NoQuery{}))
}

// Flush charges a reservation's idle time since its last flush; end closes
// it too.
func (c *Client) Flush(ctx context.Context, requestID, name string, runningProcSeconds int64, end bool) (lien.FlushResult, error) {
	return post[lien.FlushResult](ctx, c, api.PathFlush, requestID, api.FlushRequest{Name: name, RunningProcSeconds: runningProcSeconds, End: end})
}

// FlushDryRun is what Flush would do now, changing nothing.
func (c *Client) FlushDryRun(ctx context.Context, name string, runningProcSeconds int64, end bool) (lien.FlushResult, error) {
	var r lien.FlushResult
	err := c.do(ctx, http.MethodPost, api.PathFlushDryRun, nil, "", api.FlushRequest{Name: name, RunningProcSeconds: runningProcSeconds, End: end}, &r)
	return r, err
}

// Clients lists the API clients and their keys, without secrets.
func (c *Client) Clients(ctx context.Context) ([]clients.Client, error) {
	return items(get[api.List[clients.Client]](ctx, c, api.PathClients, api.NoQuery{}))
}

// AddClient adds an API client and returns its first key, whose secret is
// seen only now.
func (c *Client) AddClient(ctx context.Context, requestID string, spec clients.Spec) (clients.Client, auth.Key, error) {
	return newKey(post[api.NewKeyResponse](ctx, c, api.PathClients, requestID, spec))
}

// RotateKey adds a key to a client and returns it, whose secret is seen
// only now.
func (c *Client) RotateKey(ctx context.Context, requestID, name string) (clients.Client, auth.Key, error) {
	return newKey(post[api.NewKeyResponse](ctx, c, api.PathClientRotate, requestID, api.NameRequest{Name: name}))
}

// newKey reads the key handed over in an answer.
func newKey(r api.NewKeyResponse, err error) (clients.Client, auth.Key, error) {
	return handedOver(r.Client, r.KeyFile, err)
}

// handedOver is what an answer that hands a new key over holds: the
// record made with it, and the key read from its key file.
func handedOver[T any](made T, keyFile string, err error) (T, auth.Key, error) {
	var zero T
	if err != nil {
		return zero, auth.Key{}, err
	}
	key, err := auth.ParseKeyFile([]byte(keyFile))
	if err != nil {
		return zero, auth.Key{}, fmt.Errorf("client: the server's new key: %w", err)
	}
	return made, key, nil
}

// Peers lists the bank's peers.
func (c *Client) Peers(ctx context.Context) ([]peer.Peer, error) {
	return items(get[api.List[peer.Peer]](ctx, c, api.PathPeers, api.NoQuery{}))
}

// AddPeer adds a peer bank, with the key its bank made for this one if
// theirs is not nil, and returns the key its bank signs with, whose secret
// is seen only now.
func (c *Client) AddPeer(ctx context.Context, requestID string, spec peer.Spec, theirs *auth.Key) (peer.Peer, auth.Key, error) {
	pr := api.PeerRequest{Spec: spec}
	if theirs != nil {
		pr.KeyFile = keyLine(*theirs)
	}
	r, err := post[api.NewPeerResponse](ctx, c, api.PathPeers, requestID, pr)
	return handedOver(r.Peer, r.KeyFile, err)
}

// Exchange sends a peer bank's transaction to path, its body as the peer
// journaled it, under the transaction's id as request id: sent again, it
// gets the first answer and is applied once.
func (c *Client) Exchange(ctx context.Context, txID, path string, body json.RawMessage) (json.RawMessage, error) {
	return post[json.RawMessage](ctx, c, path, txID, body)
}

// ExchangeTransactions asks a peer bank, as its peer, for its records of
// the transactions between the two banks that began in [from, to).
func (c *Client) ExchangeTransactions(ctx context.Context, from, to time.Time) ([]peer.Exchanged, error) {
	return items(get[api.List[peer.Exchanged]](ctx, c, api.PathExchangeTxs, api.ExchangeQuery{From: from, To: to}))
}

// PeerReconcile compares the server's records of the transactions with a
// peer with the peer's.
func (c *Client) PeerReconcile(ctx context.Context, name string, from, to time.Time) (peer.Reconciliation, error) {
	return get[peer.Reconciliation](ctx, c, api.PathPeerReconcile, api.PeerReconcileQuery{Peer: name, From: from, To: to})
}

// PeerStatement is what the server's bank and a peer did for each other
// in a period (a day or a month, peer.ParsePeriod).
func (c *Client) PeerStatement(ctx context.Context, name, period string) (peer.Statement, error) {
	return get[peer.Statement](ctx, c, api.PathPeerStatement, api.PeerStatementQuery{Peer: name, Period: period})
}

// UsagePeers are the usage reports peers sent of the allocations the
// server's bank granted them: the lines the client reads.
func (c *Client) UsagePeers(ctx context.Context, q api.UsagePeersQuery) ([]peer.ReceivedUsage, error) {
	return items(get[api.List[peer.ReceivedUsage]](ctx, c, api.PathUsagePeers, q))
}

// PeerDeposit begins a deposit at a peer bank: a transaction the server's
// outbox sends.
func (c *Client) PeerDeposit(ctx context.Context, requestID, name string, spec ledger.DepositSpec) (peer.Transaction, error) {
	return post[peer.Transaction](ctx, c, api.PathPeerDeposits, requestID, api.PeerDepositRequest{Peer: name, Deposit: spec})
}

// PeerTransactions lists the transactions begun with peers, or the
// pending ones.
func (c *Client) PeerTransactions(ctx context.Context, pending bool) ([]peer.Transaction, error) {
	return items(get[api.List[peer.Transaction]](ctx, c, api.PathPeerTransactions, api.PeerTransactionsQuery{Pending: pending}))
}

// SetPeerKey gives the key a peer's bank made for this one to sign with.
func (c *Client) SetPeerKey(ctx context.Context, requestID, name string, k auth.Key) (peer.Peer, error) {
	return post[peer.Peer](ctx, c, api.PathPeerKey, requestID, api.PeerKeyRequest{Name: name, KeyFile: keyLine(k)})
}

// keyLine is a key file's line without its newline, which a body's
// strings may not hold.
func keyLine(k auth.Key) string { return strings.TrimSuffix(string(k.KeyFile()), "\n") }

// RemovePeer ends the agreement with a peer.
func (c *Client) RemovePeer(ctx context.Context, requestID, name string) (peer.Peer, error) {
	return post[peer.Peer](ctx, c, api.PathPeerRemove, requestID, api.NameRequest{Name: name})
}

// ModifyPeer changes a peer bank's URL, CA file, away policy or
// agreement.
func (c *Client) ModifyPeer(ctx context.Context, requestID, name string, ch peer.Change) (peer.Peer, error) {
	return post[peer.Peer](ctx, c, api.PathPeerModify, requestID, api.PeerModifyRequest{Name: name, Change: ch})
}

// RevokeKey ends a key of a client at once.
func (c *Client) RevokeKey(ctx context.Context, requestID, name, keyID string) (clients.Client, error) {
	return post[clients.Client](ctx, c, api.PathClientRevoke, requestID, api.RevokeRequest{Name: name, KeyID: keyID})
}

// WebLink asks for a one-time link that signs a browser in to the server's
// web page as this client.
func (c *Client) WebLink(ctx context.Context) (api.WebLinkResponse, error) {
	var r api.WebLinkResponse
	err := c.do(ctx, http.MethodPost, api.PathWebLinks, nil, "", api.WebLinkRequest{}, &r)
	return r, err
}
