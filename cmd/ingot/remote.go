package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/schedule"
)

// errNoKey is returned when --server is given without a usable key file.
var errNoKey = errors.New("no client key")

// openRemote is the bank at the server URL, reached with the key of
// --key-file. A change's request id is the command's (--request-id, or a
// new one), so that the client's own retries, and a command run again
// with the same --request-id, are applied once.
func openRemote(c *cli.Context, url string) (bankService, error) {
	if flagString(c, "archive") != "" {
		return nil, usageError{"--archive reads an archive file on this machine; the server reads none: run the command with --db on the bank's host"}
	}
	o := client.Options{KeyFile: flagString(c, "key-file"), Munge: flagBool(c, "use-munge"), MungeSocket: flagString(c, "munge-socket"),
		CAFile: flagString(c, "ca-file")}
	if path, ok := strings.CutPrefix(url, "unix:"); ok {
		o.Socket = path
	} else {
		o.Server = url
	}
	switch {
	case o.KeyFile != "" && o.Munge:
		return nil, usageError{"--key-file and --use-munge are two ways to say who you are: give one"}
	case o.KeyFile == "" && !o.Munge && o.Socket == "":
		return nil, fmt.Errorf("%w: --server needs --key-file FILE or INGOT_KEY_FILE (a key from `ingot client add`), or --use-munge, or a unix:PATH server", errNoKey)
	case o.KeyFile != "":
		// Checked here, so that a bad key file reads as one (exit 8).
		raw, err := auth.ReadSecretFile(o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNoKey, err)
		}
		if _, err := auth.ParseKeyFile(raw); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errNoKey, o.KeyFile, err)
		}
	}
	cl, err := client.Open(o)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--server: %v", err)}
	}
	return remoteBank{client: cl, ctx: c.Context}, nil
}

// remoteBank is the bank behind an ingot server: each operation is one
// call of proto/client. Errors are the server's *api.Error, whose codes
// exitCode maps.
type remoteBank struct {
	client *client.Client
	ctx    context.Context
}

func (r remoteBank) Settings() (api.Settings, error) { return r.client.Settings(r.ctx) }

func (r remoteBank) Precision() (int32, bool) { return r.client.Precision() }

func (r remoteBank) Nodes(ctx context.Context, prefix string) ([]ledger.Node, error) {
	return r.client.Nodes(ctx, prefix)
}

func (r remoteBank) AccountNumbers(ctx context.Context) (map[string]uint64, error) {
	return r.client.AccountNumbers(ctx)
}

func (r remoteBank) Node(ctx context.Context, name string) (ledger.Node, error) {
	return r.client.Node(ctx, name)
}

func (r remoteBank) CreateNode(ctx context.Context, req ledger.Request, spec ledger.NodeSpec) (ledger.Node, error) {
	return r.client.CreateNode(ctx, req.ID, spec)
}

func (r remoteBank) ModifyNode(ctx context.Context, req ledger.Request, name string, change ledger.NodeChange) (ledger.Node, error) {
	return r.client.ModifyNode(ctx, req.ID, name, change)
}

func (r remoteBank) DeactivateNode(ctx context.Context, req ledger.Request, name string) (ledger.Node, error) {
	return r.client.DeactivateNode(ctx, req.ID, name)
}

func (r remoteBank) ReactivateNode(ctx context.Context, req ledger.Request, name string) (ledger.Node, error) {
	return r.client.ReactivateNode(ctx, req.ID, name)
}

func (r remoteBank) Available(ctx context.Context, project string) (decimal.Decimal, error) {
	return r.client.Available(ctx, project)
}

func (r remoteBank) Users(ctx context.Context) ([]ledger.User, error) { return r.client.Users(ctx) }

func (r remoteBank) AddUser(ctx context.Context, req ledger.Request, spec ledger.UserSpec) (ledger.User, error) {
	return r.client.AddUser(ctx, req.ID, spec)
}

func (r remoteBank) ModifyUser(ctx context.Context, req ledger.Request, name string, change ledger.UserChange) (ledger.User, error) {
	return r.client.ModifyUser(ctx, req.ID, name, change)
}

func (r remoteBank) Contacts(ctx context.Context) ([]digest.Contact, error) {
	return r.client.Contacts(ctx)
}

func (r remoteBank) SetContact(ctx context.Context, req ledger.Request, user string, change digest.ContactChange) (digest.Contact, error) {
	return r.client.SetContact(ctx, req.ID, user, change)
}

func (r remoteBank) Notify(ctx context.Context, dryRun bool) ([]digest.Digest, error) {
	return r.client.Notify(ctx, dryRun)
}

func (r remoteBank) Machines(ctx context.Context) ([]ledger.Machine, error) {
	return r.client.Machines(ctx)
}

func (r remoteBank) AddMachine(ctx context.Context, req ledger.Request, spec ledger.MachineSpec) (ledger.Machine, error) {
	return r.client.AddMachine(ctx, req.ID, spec)
}

func (r remoteBank) ModifyMachine(ctx context.Context, req ledger.Request, name string, change ledger.MachineChange) (ledger.Machine, error) {
	return r.client.ModifyMachine(ctx, req.ID, name, change)
}

func (r remoteBank) Deposit(ctx context.Context, req ledger.Request, spec ledger.DepositSpec) (ledger.Receipt, error) {
	return r.client.Deposit(ctx, req.ID, spec)
}

func (r remoteBank) Withdraw(ctx context.Context, req ledger.Request, spec ledger.WithdrawSpec) (ledger.Receipt, error) {
	return r.client.Withdraw(ctx, req.ID, spec)
}

func (r remoteBank) Transfer(ctx context.Context, req ledger.Request, spec ledger.TransferSpec) (ledger.Receipt, error) {
	return r.client.Transfer(ctx, req.ID, spec)
}

func (r remoteBank) Balances(ctx context.Context, at time.Time) ([]ledger.NodeBalance, error) {
	return r.client.Balances(ctx, at)
}

func (r remoteBank) BalanceAt(ctx context.Context, node string, at time.Time) (ledger.NodeBalance, error) {
	return r.client.BalanceAt(ctx, node, at)
}

func (r remoteBank) BalancesWithUpcoming(ctx context.Context, at time.Time) ([]ledger.NodeBalance, error) {
	return r.client.BalancesWithUpcoming(ctx, at)
}

func (r remoteBank) BalanceWithUpcoming(ctx context.Context, node string, at time.Time) (ledger.NodeBalance, error) {
	return r.client.BalanceWithUpcoming(ctx, node, at)
}

func (r remoteBank) Shares(ctx context.Context, account string, with ...ledger.QuotaChange) (ledger.AccountShares, error) {
	return r.client.Shares(ctx, account, with...)
}

func (r remoteBank) Preempt(ctx context.Context, project, machine string, amount decimal.Decimal) (ledger.Preemption, error) {
	return r.client.Preempt(ctx, project, machine, amount)
}

func (r remoteBank) FairShare(ctx context.Context, account string, halfLife time.Duration, compensation float64) ([]ledger.FairShareNode, error) {
	return r.client.FairShare(ctx, account, halfLife, compensation)
}

func (r remoteBank) Schedules(ctx context.Context) ([]schedule.Schedule, error) {
	return r.client.Schedules(ctx)
}

func (r remoteBank) AddSchedule(ctx context.Context, req ledger.Request, spec schedule.Spec) (schedule.Schedule, error) {
	return r.client.AddSchedule(ctx, req.ID, spec)
}

func (r remoteBank) ModifySchedule(ctx context.Context, req ledger.Request, id uint64, change schedule.Change) (schedule.Schedule, error) {
	return r.client.ModifySchedule(ctx, req.ID, id, change)
}

func (r remoteBank) CancelSchedule(ctx context.Context, req ledger.Request, id uint64) (schedule.Schedule, error) {
	return r.client.CancelSchedule(ctx, req.ID, id)
}

func (r remoteBank) Upcoming(ctx context.Context, account string, until time.Time) ([]schedule.Period, error) {
	return r.client.Upcoming(ctx, account, until)
}

func (r remoteBank) Forecast(ctx context.Context, nodes []string) ([]forecast.Forecast, error) {
	if nodes == nil {
		return r.client.Forecast(ctx, "")
	}
	var out []forecast.Forecast
	for _, n := range nodes {
		fs, err := r.client.Forecast(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

func (r remoteBank) Statement(ctx context.Context, account string, from, to time.Time, summarize bool) (api.Statement, error) {
	return r.client.Statement(ctx, account, from, to, summarize)
}

func (r remoteBank) Journal(ctx context.Context, f ledger.JournalFilter) ([]ledger.Entry, error) {
	return r.client.Journal(ctx, f)
}

func (r remoteBank) Audit(ctx context.Context, opts ledger.AuditOptions) (ledger.AuditReport, error) {
	return r.client.Audit(ctx, opts)
}

func (r remoteBank) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return r.client.Backup(ctx, w)
}

func (r remoteBank) Rates(ctx context.Context) (charge.RateTable, error) { return r.client.Rates(ctx) }

func (r remoteBank) SetRates(ctx context.Context, req ledger.Request, t charge.RateTable) (charge.RateTable, error) {
	return r.client.SetRates(ctx, req.ID, t)
}

func (r remoteBank) Config(ctx context.Context) (lien.Config, error) { return r.client.Config(ctx) }

func (r remoteBank) ChangeConfig(ctx context.Context, req ledger.Request, ch lien.ConfigChange) (lien.Config, error) {
	return r.client.ChangeConfig(ctx, req.ID, ch)
}

func (r remoteBank) Quote(ctx context.Context, spec lien.QuoteSpec) (lien.QuoteResult, error) {
	return r.client.Quote(ctx, spec)
}

func (r remoteBank) Guarantee(ctx context.Context, req ledger.Request, spec lien.QuoteSpec, expires time.Time, uses int) (lien.StoredQuote, error) {
	return r.client.Guarantee(ctx, req.ID, spec, expires, uses)
}

func (r remoteBank) Quotes(ctx context.Context) ([]lien.StoredQuote, error) {
	return r.client.Quotes(ctx)
}

func (r remoteBank) Place(ctx context.Context, req ledger.Request, spec lien.PlaceSpec) (lien.LienResult, error) {
	return r.client.PlaceLien(ctx, req.ID, spec)
}

func (r remoteBank) Extend(ctx context.Context, req ledger.Request, job lien.Job, wallclockLimitSeconds int64) (lien.LienResult, error) {
	return r.client.ExtendLien(ctx, req.ID, job, wallclockLimitSeconds)
}

func (r remoteBank) Release(ctx context.Context, req ledger.Request, job lien.Job) (ledger.Lien, error) {
	return r.client.ReleaseLien(ctx, req.ID, job)
}

func (r remoteBank) Sweep(ctx context.Context, req ledger.Request) ([]ledger.Lien, error) {
	return r.client.Sweep(ctx, req.ID)
}

func (r remoteBank) Liens(ctx context.Context, node string, all bool) ([]ledger.Lien, error) {
	return r.client.Liens(ctx, node, all)
}

func (r remoteBank) JobLien(ctx context.Context, job lien.Job) (ledger.Lien, error) {
	return r.client.JobLien(ctx, job)
}

func (r remoteBank) Charge(ctx context.Context, req ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error) {
	return r.client.Charge(ctx, req.ID, spec)
}

func (r remoteBank) Charges(ctx context.Context, job lien.Job) ([]ledger.Charge, error) {
	return r.client.Charges(ctx, job)
}

func (r remoteBank) FindCharges(ctx context.Context, f lien.ChargeFilter) ([]ledger.Charge, error) {
	return r.client.FindCharges(ctx, f)
}

func (r remoteBank) PeerUsage(ctx context.Context, f lien.ChargeFilter) ([]peer.ReceivedUsage, error) {
	return r.client.UsagePeers(ctx, api.UsagePeersQuery{Node: f.Node, Since: f.Since, Until: f.Until})
}

func (r remoteBank) Refund(ctx context.Context, req ledger.Request, spec lien.RefundSpec) (ledger.Charge, error) {
	return r.client.Refund(ctx, req.ID, spec)
}

func (r remoteBank) ModifyAllocation(ctx context.Context, req ledger.Request, id uint64, change ledger.AllocationChange) (ledger.Allocation, error) {
	return r.client.ModifyAllocation(ctx, req.ID, id, change)
}

func (r remoteBank) MoveEnd(ctx context.Context, req ledger.Request, job lien.Job, end time.Time) (ledger.Lien, error) {
	return r.client.MoveLienEnd(ctx, req.ID, job, end)
}

func (r remoteBank) RefundJob(ctx context.Context, req ledger.Request, spec lien.JobRefundSpec) (lien.JobRefund, error) {
	return r.client.RefundJob(ctx, req.ID, spec)
}

func (r remoteBank) AddReservation(ctx context.Context, req ledger.Request, spec lien.ReservationSpec) (lien.Reservation, error) {
	return r.client.AddReservation(ctx, req.ID, spec)
}

func (r remoteBank) Reservations(ctx context.Context) ([]lien.Reservation, error) {
	return r.client.Reservations(ctx)
}

func (r remoteBank) Flush(ctx context.Context, req ledger.Request, name string, running int64, end bool) (lien.FlushResult, error) {
	return r.client.Flush(ctx, req.ID, name, running, end)
}

func (r remoteBank) FlushDryRun(ctx context.Context, name string, running int64, end bool) (lien.FlushResult, error) {
	return r.client.FlushDryRun(ctx, name, running, end)
}

func (r remoteBank) Registry(bool) (clientRegistry, error) { return remoteRegistry(r), nil }

func (r remoteBank) Peers(bool) (peerRegistry, error) { return remotePeers(r), nil }

// remotePeers is the server's peers (admins only).
type remotePeers remoteBank

func (r remotePeers) Add(ctx context.Context, req ledger.Request, spec peer.Spec, theirs *auth.Key) (peer.Peer, auth.Key, error) {
	return r.client.AddPeer(ctx, req.ID, spec, theirs)
}

func (r remotePeers) SetKey(ctx context.Context, req ledger.Request, name string, k auth.Key) (peer.Peer, error) {
	return r.client.SetPeerKey(ctx, req.ID, name, k)
}

func (r remotePeers) Remove(ctx context.Context, req ledger.Request, name string) (peer.Peer, error) {
	return r.client.RemovePeer(ctx, req.ID, name)
}

func (r remotePeers) Modify(ctx context.Context, req ledger.Request, name string, ch peer.Change) (peer.Peer, error) {
	return r.client.ModifyPeer(ctx, req.ID, name, ch)
}

func (r remotePeers) List(ctx context.Context) ([]peer.Peer, error) { return r.client.Peers(ctx) }

func (r remotePeers) Deposit(ctx context.Context, req ledger.Request, name string, spec ledger.DepositSpec) (peer.Transaction, error) {
	return r.client.PeerDeposit(ctx, req.ID, name, spec)
}

func (r remotePeers) Transactions(ctx context.Context, pending bool) ([]peer.Transaction, error) {
	return r.client.PeerTransactions(ctx, pending)
}

func (r remotePeers) Reconcile(ctx context.Context, name string, from, to time.Time) (peer.Reconciliation, error) {
	return r.client.PeerReconcile(ctx, name, from, to)
}

func (r remotePeers) Statement(ctx context.Context, name string, p peer.Period) (peer.Statement, error) {
	return r.client.PeerStatement(ctx, name, p.Name)
}

// Close has nothing to close: each call is one HTTP request.
func (r remoteBank) Close() error { return nil }

// remoteRegistry is the server's API clients (admins only).
type remoteRegistry remoteBank

func (r remoteRegistry) Add(ctx context.Context, req ledger.Request, spec clients.Spec) (clients.Client, auth.Key, error) {
	return r.client.AddClient(ctx, req.ID, spec)
}

func (r remoteRegistry) Rotate(ctx context.Context, req ledger.Request, name string) (clients.Client, auth.Key, error) {
	return r.client.RotateKey(ctx, req.ID, name)
}

func (r remoteRegistry) Revoke(ctx context.Context, req ledger.Request, name, keyID string) (clients.Client, error) {
	return r.client.RevokeKey(ctx, req.ID, name, keyID)
}

func (r remoteRegistry) List(ctx context.Context) ([]clients.Client, error) {
	return r.client.Clients(ctx)
}
