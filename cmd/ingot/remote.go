package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// errNoKey is returned when --server is given without a usable key file.
var errNoKey = errors.New("no client key")

// openRemote is the bank at the server URL, reached with the key of
// --key-file. A change's request id is the command's (--request-id, or a
// new one), so that the client's own retries, and a command run again
// with the same --request-id, are applied once.
func openRemote(c *cli.Context, url string) (bankService, error) {
	o := client.Options{KeyFile: flagString(c, "key-file"), Munge: flagBool(c, "use-munge"), MungeSocket: flagString(c, "munge-socket")}
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
		raw, err := os.ReadFile(o.KeyFile)
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

func (r remoteBank) Nodes(prefix string) ([]ledger.Node, error) { return r.client.Nodes(r.ctx, prefix) }

func (r remoteBank) Node(name string) (ledger.Node, error) { return r.client.Node(r.ctx, name) }

func (r remoteBank) CreateNode(req ledger.Request, spec ledger.NodeSpec) (ledger.Node, error) {
	return r.client.CreateNode(r.ctx, req.ID, spec)
}

func (r remoteBank) ModifyNode(req ledger.Request, name string, change ledger.NodeChange) (ledger.Node, error) {
	return r.client.ModifyNode(r.ctx, req.ID, name, change)
}

func (r remoteBank) DeactivateNode(req ledger.Request, name string) (ledger.Node, error) {
	return r.client.DeactivateNode(r.ctx, req.ID, name)
}

func (r remoteBank) Users() ([]ledger.User, error) { return r.client.Users(r.ctx) }

func (r remoteBank) AddUser(req ledger.Request, spec ledger.UserSpec) (ledger.User, error) {
	return r.client.AddUser(r.ctx, req.ID, spec)
}

func (r remoteBank) ModifyUser(req ledger.Request, name string, change ledger.UserChange) (ledger.User, error) {
	return r.client.ModifyUser(r.ctx, req.ID, name, change)
}

func (r remoteBank) Machines() ([]ledger.Machine, error) { return r.client.Machines(r.ctx) }

func (r remoteBank) AddMachine(req ledger.Request, spec ledger.MachineSpec) (ledger.Machine, error) {
	return r.client.AddMachine(r.ctx, req.ID, spec)
}

func (r remoteBank) ModifyMachine(req ledger.Request, name string, change ledger.MachineChange) (ledger.Machine, error) {
	return r.client.ModifyMachine(r.ctx, req.ID, name, change)
}

func (r remoteBank) Deposit(req ledger.Request, spec ledger.DepositSpec) (ledger.Receipt, error) {
	return r.client.Deposit(r.ctx, req.ID, spec)
}

func (r remoteBank) Withdraw(req ledger.Request, spec ledger.WithdrawSpec) (ledger.Receipt, error) {
	return r.client.Withdraw(r.ctx, req.ID, spec)
}

func (r remoteBank) Transfer(req ledger.Request, spec ledger.TransferSpec) (ledger.Receipt, error) {
	return r.client.Transfer(r.ctx, req.ID, spec)
}

func (r remoteBank) Balances(at time.Time) ([]ledger.NodeBalance, error) {
	return r.client.Balances(r.ctx, at)
}

func (r remoteBank) BalanceAt(node string, at time.Time) (ledger.NodeBalance, error) {
	return r.client.BalanceAt(r.ctx, node, at)
}

func (r remoteBank) Shares(account string) (ledger.AccountShares, error) {
	return r.client.Shares(r.ctx, account)
}

func (r remoteBank) FairShare(account string, halfLife time.Duration, compensation float64) ([]ledger.FairShareNode, error) {
	return r.client.FairShare(r.ctx, account, halfLife, compensation)
}

func (r remoteBank) Statement(account string, from, to time.Time, summarize bool) (ledger.Statement, error) {
	return r.client.Statement(r.ctx, account, from, to, summarize)
}

func (r remoteBank) Journal(f ledger.JournalFilter) ([]ledger.Entry, error) {
	return r.client.Journal(r.ctx, f)
}

func (r remoteBank) Audit() (ledger.AuditReport, error) { return r.client.Audit(r.ctx) }

func (r remoteBank) Backup(w io.Writer) (int64, error) { return r.client.Backup(r.ctx, w) }

func (r remoteBank) Rates() (charge.RateTable, error) { return r.client.Rates(r.ctx) }

func (r remoteBank) SetRates(req ledger.Request, t charge.RateTable) (charge.RateTable, error) {
	return r.client.SetRates(r.ctx, req.ID, t)
}

func (r remoteBank) Config() (lien.Config, error) { return r.client.Config(r.ctx) }

func (r remoteBank) ChangeConfig(req ledger.Request, ch lien.ConfigChange) (lien.Config, error) {
	return r.client.ChangeConfig(r.ctx, req.ID, ch)
}

func (r remoteBank) Quote(spec lien.QuoteSpec) (lien.QuoteResult, error) {
	return r.client.Quote(r.ctx, spec)
}

func (r remoteBank) Guarantee(req ledger.Request, spec lien.QuoteSpec, expires time.Time, uses int) (lien.StoredQuote, error) {
	return r.client.Guarantee(r.ctx, req.ID, spec, expires, uses)
}

func (r remoteBank) Quotes() ([]lien.StoredQuote, error) { return r.client.Quotes(r.ctx) }

func (r remoteBank) Place(req ledger.Request, spec lien.PlaceSpec) (lien.LienResult, error) {
	return r.client.PlaceLien(r.ctx, req.ID, spec)
}

func (r remoteBank) Extend(req ledger.Request, job lien.Job, wallclockLimitSeconds int64) (lien.LienResult, error) {
	return r.client.ExtendLien(r.ctx, req.ID, job, wallclockLimitSeconds)
}

func (r remoteBank) Release(req ledger.Request, job lien.Job) (ledger.Lien, error) {
	return r.client.ReleaseLien(r.ctx, req.ID, job)
}

func (r remoteBank) Sweep(req ledger.Request) ([]ledger.Lien, error) {
	return r.client.Sweep(r.ctx, req.ID)
}

func (r remoteBank) Liens(node string, all bool) ([]ledger.Lien, error) {
	return r.client.Liens(r.ctx, node, all)
}

func (r remoteBank) JobLien(job lien.Job) (ledger.Lien, error) { return r.client.JobLien(r.ctx, job) }

func (r remoteBank) Charge(req ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error) {
	return r.client.Charge(r.ctx, req.ID, spec)
}

func (r remoteBank) Charges(job lien.Job) ([]ledger.Charge, error) {
	return r.client.Charges(r.ctx, job)
}

func (r remoteBank) Refund(req ledger.Request, spec lien.RefundSpec) (ledger.Charge, error) {
	return r.client.Refund(r.ctx, req.ID, spec)
}

func (r remoteBank) AddReservation(req ledger.Request, spec lien.ReservationSpec) (lien.Reservation, error) {
	return r.client.AddReservation(r.ctx, req.ID, spec)
}

func (r remoteBank) Reservations() ([]lien.Reservation, error) { return r.client.Reservations(r.ctx) }

func (r remoteBank) Flush(req ledger.Request, name string, running int64, end bool) (lien.FlushResult, error) {
	return r.client.Flush(r.ctx, req.ID, name, running, end)
}

func (r remoteBank) Registry(bool) (clientRegistry, error) { return remoteRegistry(r), nil }

// Close has nothing to close: each call is one HTTP request.
func (r remoteBank) Close() error { return nil }

// remoteRegistry is the server's API clients (admins only).
type remoteRegistry remoteBank

func (r remoteRegistry) Add(req ledger.Request, name string, role clients.Role, scope []string) (clients.Client, auth.Key, error) {
	return r.client.AddClient(r.ctx, req.ID, name, role, scope)
}

func (r remoteRegistry) Rotate(req ledger.Request, name string) (clients.Client, auth.Key, error) {
	return r.client.RotateKey(r.ctx, req.ID, name)
}

func (r remoteRegistry) Revoke(req ledger.Request, name, keyID string) (clients.Client, error) {
	return r.client.RevokeKey(r.ctx, req.ID, name, keyID)
}

func (r remoteRegistry) List() ([]clients.Client, error) { return r.client.Clients(r.ctx) }
