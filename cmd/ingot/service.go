package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/link"
	"github.com/ingot-hpc/ingot/schedule"
)

// bankService is every operation the commands ask of the bank, named and
// typed as the bank's own methods are. localBank does them on the database
// file, remoteBank through the server (remote.go); each command is written
// once, against this interface.
type bankService interface {
	// Settings are the bank's settings, when it was created, and its clock.
	Settings() (api.Settings, error)
	// Precision is the bank's number of decimal places, if known without
	// asking: always on the file, and through a server once it has
	// answered a request (its answers say it, api.HeaderPrecision).
	Precision() (int32, bool)

	Nodes(ctx context.Context, prefix string) ([]ledger.Node, error)
	Node(ctx context.Context, name string) (ledger.Node, error)
	// AccountNumbers are the accounts' numbers, Gold's account ids.
	AccountNumbers(ctx context.Context) (map[string]uint64, error)
	CreateNode(ctx context.Context, req ledger.Request, spec ledger.NodeSpec) (ledger.Node, error)
	ModifyNode(ctx context.Context, req ledger.Request, name string, change ledger.NodeChange) (ledger.Node, error)
	DeactivateNode(ctx context.Context, req ledger.Request, name string) (ledger.Node, error)
	ReactivateNode(ctx context.Context, req ledger.Request, name string) (ledger.Node, error)

	Users(ctx context.Context) ([]ledger.User, error)
	AddUser(ctx context.Context, req ledger.Request, spec ledger.UserSpec) (ledger.User, error)
	ModifyUser(ctx context.Context, req ledger.Request, name string, change ledger.UserChange) (ledger.User, error)
	// Contacts are where digests go (package digest), SetContact changes
	// a user's.
	Contacts(ctx context.Context) ([]digest.Contact, error)
	SetContact(ctx context.Context, req ledger.Request, user string, change digest.ContactChange) (digest.Contact, error)
	// Notify sends the digests due now (dryRun: says what they would be):
	// on the file with the command's settings, through a server with the
	// server's.
	Notify(ctx context.Context, dryRun bool) ([]digest.Digest, error)
	Machines(ctx context.Context) ([]ledger.Machine, error)
	AddMachine(ctx context.Context, req ledger.Request, spec ledger.MachineSpec) (ledger.Machine, error)
	ModifyMachine(ctx context.Context, req ledger.Request, name string, change ledger.MachineChange) (ledger.Machine, error)

	Deposit(ctx context.Context, req ledger.Request, spec ledger.DepositSpec) (ledger.Receipt, error)
	Withdraw(ctx context.Context, req ledger.Request, spec ledger.WithdrawSpec) (ledger.Receipt, error)
	Transfer(ctx context.Context, req ledger.Request, spec ledger.TransferSpec) (ledger.Receipt, error)
	ModifyAllocation(ctx context.Context, req ledger.Request, id uint64, change ledger.AllocationChange) (ledger.Allocation, error)

	Balances(ctx context.Context, at time.Time) ([]ledger.NodeBalance, error)
	BalanceAt(ctx context.Context, node string, at time.Time) (ledger.NodeBalance, error)
	// BalancesWithUpcoming and BalanceWithUpcoming list every allocation
	// yet to start or used up, not only the first ledger.UpcomingListed
	// and ledger.UsedUpListed.
	BalancesWithUpcoming(ctx context.Context, at time.Time) ([]ledger.NodeBalance, error)
	BalanceWithUpcoming(ctx context.Context, node string, at time.Time) (ledger.NodeBalance, error)
	Shares(ctx context.Context, account string, with ...ledger.QuotaChange) (ledger.AccountShares, error)
	// Available is what a new lien on project may take now (its HFS share).
	Available(ctx context.Context, project string) (decimal.Decimal, error)
	// Preempt is what to preempt so that a lien of amount on project fits.
	Preempt(ctx context.Context, project, machine string, amount decimal.Decimal) (ledger.Preemption, error)
	FairShare(ctx context.Context, account string, halfLife time.Duration, compensation float64) ([]ledger.FairShareNode, error)
	Schedules(ctx context.Context) ([]schedule.Schedule, error)
	AddSchedule(ctx context.Context, req ledger.Request, spec schedule.Spec) (schedule.Schedule, error)
	ModifySchedule(ctx context.Context, req ledger.Request, id uint64, change schedule.Change) (schedule.Schedule, error)
	CancelSchedule(ctx context.Context, req ledger.Request, id uint64) (schedule.Schedule, error)
	// Upcoming are the periods to come before until of account's
	// schedules ("": every account read).
	Upcoming(ctx context.Context, account string, until time.Time) ([]schedule.Period, error)
	// Forecast is the forecast of each node named, nil: of every node read.
	Forecast(ctx context.Context, nodes []string) ([]forecast.Forecast, error)
	// Statement is the account's, with what peers reported spending of
	// the bank's grants into the account there.
	Statement(ctx context.Context, account string, from, to time.Time, summarize bool) (api.Statement, error)
	Journal(ctx context.Context, f ledger.JournalFilter) ([]ledger.Entry, error)
	Audit(ctx context.Context, opts ledger.AuditOptions) (ledger.AuditReport, error)
	// Backup writes a consistent copy of the database file to w.
	Backup(ctx context.Context, w io.Writer) (int64, error)

	Rates(ctx context.Context) (charge.RateTable, error)
	SetRates(ctx context.Context, req ledger.Request, t charge.RateTable) (charge.RateTable, error)
	Config(ctx context.Context) (lien.Config, error)
	ChangeConfig(ctx context.Context, req ledger.Request, ch lien.ConfigChange) (lien.Config, error)

	Quote(ctx context.Context, spec lien.QuoteSpec) (lien.QuoteResult, error)
	Guarantee(ctx context.Context, req ledger.Request, spec lien.QuoteSpec, expires time.Time, uses int) (lien.StoredQuote, error)
	Quotes(ctx context.Context) ([]lien.StoredQuote, error)
	Place(ctx context.Context, req ledger.Request, spec lien.PlaceSpec) (lien.LienResult, error)
	Extend(ctx context.Context, req ledger.Request, job lien.Job, wallclockLimitSeconds int64) (lien.LienResult, error)
	Release(ctx context.Context, req ledger.Request, job lien.Job) (ledger.Lien, error)
	MoveEnd(ctx context.Context, req ledger.Request, job lien.Job, end time.Time) (ledger.Lien, error)
	Sweep(ctx context.Context, req ledger.Request) ([]ledger.Lien, error)
	Liens(ctx context.Context, node string, all bool) ([]ledger.Lien, error)
	JobLien(ctx context.Context, job lien.Job) (ledger.Lien, error)
	Charge(ctx context.Context, req ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error)
	Charges(ctx context.Context, job lien.Job) ([]ledger.Charge, error)
	FindCharges(ctx context.Context, f lien.ChargeFilter) ([]ledger.Charge, error)
	Refund(ctx context.Context, req ledger.Request, spec lien.RefundSpec) (ledger.Charge, error)
	RefundJob(ctx context.Context, req ledger.Request, spec lien.JobRefundSpec) (lien.JobRefund, error)
	AddReservation(ctx context.Context, req ledger.Request, spec lien.ReservationSpec) (lien.Reservation, error)
	Reservations(ctx context.Context) ([]lien.Reservation, error)
	Flush(ctx context.Context, req ledger.Request, name string, running int64, end bool) (lien.FlushResult, error)
	// FlushDryRun is what Flush would do now, changing nothing.
	FlushDryRun(ctx context.Context, name string, running int64, end bool) (lien.FlushResult, error)

	// PeerUsage are the usage reports peers sent of the allocations the
	// bank granted them (their lines of accounts in f.Node, of the days
	// that begin in [f.Since, f.Until)): through a server, the lines the
	// client reads.
	PeerUsage(ctx context.Context, f lien.ChargeFilter) ([]peer.ReceivedUsage, error)

	// Registry is the bank's API clients; makesKeys lets a local bank make
	// its server key if it has none.
	Registry(makesKeys bool) (clientRegistry, error)
	// Peers is the bank's peer banks; makesKeys is Registry's.
	Peers(makesKeys bool) (peerRegistry, error)
	Close() error
}

// peerRegistry is the peer banks: *peer.Registry locally, the server's
// /v1/peers remotely.
type peerRegistry interface {
	Add(ctx context.Context, req ledger.Request, spec peer.Spec, theirs *auth.Key) (peer.Peer, auth.Key, error)
	SetKey(ctx context.Context, req ledger.Request, name string, k auth.Key) (peer.Peer, error)
	Remove(ctx context.Context, req ledger.Request, name string) (peer.Peer, error)
	Modify(ctx context.Context, req ledger.Request, name string, ch peer.Change) (peer.Peer, error)
	List(ctx context.Context) ([]peer.Peer, error)
	Deposit(ctx context.Context, req ledger.Request, name string, spec ledger.DepositSpec) (peer.Transaction, error)
	Transactions(ctx context.Context, pending bool) ([]peer.Transaction, error)
	// Reconcile compares the bank's records of the transactions with a
	// peer that began in [from, to) with the peer's.
	Reconcile(ctx context.Context, name string, from, to time.Time) (peer.Reconciliation, error)
	// Statement is what the bank and a peer did for each other in p.
	Statement(ctx context.Context, name string, p peer.Period) (peer.Statement, error)
}

func (b localBank) Statement(ctx context.Context, account string, from, to time.Time, summarize bool) (api.Statement, error) {
	st, err := b.Ledger.Statement(ctx, account, from, to, summarize)
	if err != nil {
		return api.Statement{}, err
	}
	spent, err := peer.SpentAt(ctx, b.Ledger, account, from, to)
	return api.Statement{Statement: st, SpentAtPeers: spent}, err
}

func (b localBank) PeerUsage(ctx context.Context, f lien.ChargeFilter) ([]peer.ReceivedUsage, error) {
	reports, err := peer.Reported(ctx, b.Ledger, "", f.Since, f.Until)
	return peer.Keep(reports, func(l peer.UsageLine) bool { return f.Node == "" || ledger.InSubtree(l.Account, f.Node) }), err
}

// localPeers is the peers of the bank on the file: it asks the peers
// itself, with the keys the file holds sealed.
type localPeers struct{ *peer.Registry }

func (p localPeers) Reconcile(ctx context.Context, name string, from, to time.Time) (peer.Reconciliation, error) {
	return link.Reconcile(ctx, p.Registry, name, from, to)
}

// clientRegistry is the API clients and their keys: *clients.Registry
// locally, the server's /v1/clients remotely.
type clientRegistry interface {
	Add(ctx context.Context, req ledger.Request, spec clients.Spec) (clients.Client, auth.Key, error)
	Rotate(ctx context.Context, req ledger.Request, name string) (clients.Client, auth.Key, error)
	Revoke(ctx context.Context, req ledger.Request, name, keyID string) (clients.Client, error)
	List(ctx context.Context) ([]clients.Client, error)
}

// localBank is the bank on the database file: the ledger and its lien
// layer do the operations themselves.
type localBank struct {
	*ledger.Ledger
	*lien.Bank
	cli *cli.Context // for the server key of Registry
}

// Settings is the ledger's, with its creation time and clock.
func (b localBank) Settings() (api.Settings, error) {
	archived, err := b.ArchivedBefore(b.cli.Context)
	return api.Settings{Settings: b.Ledger.Settings(), Created: b.Created(), Now: b.Now(), ArchivedBefore: archived}, err
}

func (b localBank) Forecast(ctx context.Context, nodes []string) ([]forecast.Forecast, error) {
	return forecast.Of(ctx, b.Ledger, nodes)
}

func (b localBank) Contacts(ctx context.Context) ([]digest.Contact, error) {
	return digest.NewContacts(b.Ledger).List(ctx)
}

func (b localBank) SetContact(ctx context.Context, req ledger.Request, user string, change digest.ContactChange) (digest.Contact, error) {
	return digest.NewContacts(b.Ledger).Set(ctx, req, user, change)
}

func (b localBank) Schedules(ctx context.Context) ([]schedule.Schedule, error) {
	return schedule.New(b.Ledger).List(ctx)
}

func (b localBank) AddSchedule(ctx context.Context, req ledger.Request, spec schedule.Spec) (schedule.Schedule, error) {
	return schedule.New(b.Ledger).Add(ctx, req, spec)
}

func (b localBank) ModifySchedule(ctx context.Context, req ledger.Request, id uint64, change schedule.Change) (schedule.Schedule, error) {
	return schedule.New(b.Ledger).Modify(ctx, req, id, change)
}

func (b localBank) CancelSchedule(ctx context.Context, req ledger.Request, id uint64) (schedule.Schedule, error) {
	return schedule.New(b.Ledger).Cancel(ctx, req, id)
}

func (b localBank) Upcoming(ctx context.Context, account string, until time.Time) ([]schedule.Period, error) {
	return schedule.New(b.Ledger).Upcoming(ctx, account, until)
}

func (b localBank) Precision() (int32, bool) { return b.Ledger.Settings().Precision, true }

func (b localBank) Registry(makesKeys bool) (clientRegistry, error) {
	reg, err := openClients(b.cli, b.Ledger, makesKeys)
	if err != nil {
		return nil, err
	}
	return reg, nil
}

func (b localBank) Peers(makesKeys bool) (peerRegistry, error) {
	reg, err := openClients(b.cli, b.Ledger, makesKeys)
	if err != nil {
		return nil, err
	}
	return localPeers{peer.New(b.Ledger, reg)}, nil
}

// On the bank's file, a job homed at a peer bank is refused: its lien,
// charge, release and refund are the home bank's to make, and what
// forwards them is the bank's server, whose outbox sends them until the
// home bank answers (a command on the file would leave a transaction that
// nothing sends until a server runs). The scheduler talks to the server;
// so does an operator's command, with --server.

// Place is the lien layer's, a homed job's refused with how to make it.
func (b localBank) Place(ctx context.Context, req ledger.Request, spec lien.PlaceSpec) (lien.LienResult, error) {
	r, err := b.Bank.Place(ctx, req, spec)
	return r, throughServer(err)
}

// Charge is the lien layer's, a homed job's refused with how to make it.
func (b localBank) Charge(ctx context.Context, req ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error) {
	r, err := b.Bank.Charge(ctx, req, spec)
	return r, throughServer(err)
}

// Release is the lien layer's; a job without a lien here whose lien was
// forwarded is refused with how to release it.
func (b localBank) Release(ctx context.Context, req ledger.Request, job lien.Job) (ledger.Lien, error) {
	l, err := b.Bank.Release(ctx, req, job)
	if errors.Is(err, lien.ErrNoLien) {
		return l, b.homedJob(ctx, job, "release", err)
	}
	return l, err
}

// RefundJob is the lien layer's; a job without charges here whose charges
// were forwarded is refused with how to refund them.
func (b localBank) RefundJob(ctx context.Context, req ledger.Request, spec lien.JobRefundSpec) (lien.JobRefund, error) {
	r, err := b.Bank.RefundJob(ctx, req, spec)
	if errors.Is(err, ledger.ErrNotFound) {
		return r, b.homedJob(ctx, spec.Job, "refund", err)
	}
	return r, err
}

// homedJob is notHere, or, for a job whose lien or charge was forwarded
// to its home bank, the refusal of what on the file.
func (b localBank) homedJob(ctx context.Context, job lien.Job, what string, notHere error) error {
	home, ok, err := peer.New(b.Ledger, nil).HomedJob(ctx, job.Machine, job.ID)
	if err != nil || !ok {
		return errors.Join(notHere, err)
	}
	return throughServer(fmt.Errorf("%w: the %s of job %s on %s: its liens and charges were made at home bank %s", lien.ErrHomed, what, job.ID, job.Machine, home))
}

// throughServer says, of a homed job's operation refused on the bank's
// file, how to make it.
func throughServer(err error) error {
	if !errors.Is(err, lien.ErrHomed) {
		return err
	}
	return fmt.Errorf("%w; on the bank's file nothing is forwarded: run the command through the bank's server (ingot serve; --server URL), which sends it to the home bank and answers with its answer", err)
}

// bank is what a command works on: the bank's operations, local or
// remote. Its settings are asked for only by a command that needs them
// (a statement's default period, a guaranteed quote's expiry, the precision
// of an amount read before the command's request), once: the precision
// of what a command prints comes with the answer it prints. So a command
// through a server costs the one request it makes, not a request for
// /v1/settings before it.
type bank struct {
	bankService
	asked *askedSettings
}

// askedSettings are the settings once asked for.
type askedSettings struct {
	done     bool
	settings api.Settings
	err      error
}

// settings are the bank's settings and its clock, asked for the first
// time they are needed.
func (b bank) settings() (api.Settings, error) {
	if !b.asked.done {
		b.asked.settings, b.asked.err = b.Settings()
		b.asked.done = true
	}
	return b.asked.settings, b.asked.err
}

// precision is the bank's number of decimal places: known on the file,
// and through a server from its last answer; else asked for (before the
// command's first request, or of a server that does not say it).
func (b bank) precision() (int32, error) {
	if p, ok := b.Precision(); ok {
		return p, nil
	}
	s, err := b.settings()
	return s.Precision, err
}

// withBank runs fn on the bank of this command: through the server with
// --server, else on the database file; then closes it.
func withBank(c *cli.Context, fn func(bank) error) error {
	svc, err := openService(c)
	if err != nil {
		return err
	}
	err = fn(bank{bankService: svc, asked: &askedSettings{}})
	if cerr := svc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close bank: %w", cerr)
	}
	return err
}

func openService(c *cli.Context) (bankService, error) {
	if url := flagString(c, "server"); url != "" {
		return openRemote(c, url)
	}
	l, _, err := openBank(c, boltstore.Options{NoUpgrade: slices.Contains(readingCommands, commandPath(c))})
	if err != nil {
		return nil, err
	}
	return localBank{Ledger: l, Bank: lien.New(l), cli: c}, nil
}

// readingCommands only read the bank (audit keeps its checkpoint, which is
// not the bank's state): they refuse a bank of an earlier ingot, saying how
// to upgrade a copy, so that reading an old backup or an archived year
// with a newer ingot never upgrades it in place.
var readingCommands = []string{
	"balance", "statement", "journal", "usage", "audit", "backup",
	"account list", "account show", "project list", "project show", "user list", "user contacts", "machine list",
	"allocation schedule list", "allocation schedule show", "rate list", "policy show", "quote list", "lien list", "lien show", "charge list", "reservation list",
	"hfs show", "preempt", "fairshare",
}
