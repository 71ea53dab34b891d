package main

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// bankService is every operation the commands ask of the bank, named and
// typed as the bank's own methods are. localBank does them on the database
// file, remoteBank through the server (remote.go); each command is written
// once, against this interface.
type bankService interface {
	// Settings are the bank's settings, when it was created, and its clock.
	Settings() (api.Settings, error)

	Nodes(prefix string) ([]ledger.Node, error)
	Node(name string) (ledger.Node, error)
	CreateNode(req ledger.Request, spec ledger.NodeSpec) (ledger.Node, error)
	ModifyNode(req ledger.Request, name string, change ledger.NodeChange) (ledger.Node, error)
	DeactivateNode(req ledger.Request, name string) (ledger.Node, error)

	Users() ([]ledger.User, error)
	AddUser(req ledger.Request, spec ledger.UserSpec) (ledger.User, error)
	ModifyUser(req ledger.Request, name string, change ledger.UserChange) (ledger.User, error)
	Machines() ([]ledger.Machine, error)
	AddMachine(req ledger.Request, spec ledger.MachineSpec) (ledger.Machine, error)
	ModifyMachine(req ledger.Request, name string, change ledger.MachineChange) (ledger.Machine, error)

	Deposit(req ledger.Request, spec ledger.DepositSpec) (ledger.Receipt, error)
	Withdraw(req ledger.Request, spec ledger.WithdrawSpec) (ledger.Receipt, error)
	Transfer(req ledger.Request, spec ledger.TransferSpec) (ledger.Receipt, error)

	Balances(at time.Time) ([]ledger.NodeBalance, error)
	BalanceAt(node string, at time.Time) (ledger.NodeBalance, error)
	Shares(account string) (ledger.AccountShares, error)
	FairShare(account string, halfLife time.Duration, compensation float64) ([]ledger.FairShareNode, error)
	Statement(account string, from, to time.Time, summarize bool) (ledger.Statement, error)
	Journal(f ledger.JournalFilter) ([]ledger.Entry, error)
	Audit() (ledger.AuditReport, error)
	// Backup writes a consistent copy of the database file to w.
	Backup(w io.Writer) (int64, error)

	Rates() (charge.RateTable, error)
	SetRates(req ledger.Request, t charge.RateTable) (charge.RateTable, error)
	Config() (lien.Config, error)
	ChangeConfig(req ledger.Request, ch lien.ConfigChange) (lien.Config, error)

	Quote(spec lien.QuoteSpec) (lien.QuoteResult, error)
	Guarantee(req ledger.Request, spec lien.QuoteSpec, expires time.Time, uses int) (lien.StoredQuote, error)
	Quotes() ([]lien.StoredQuote, error)
	Place(req ledger.Request, spec lien.PlaceSpec) (lien.LienResult, error)
	Extend(req ledger.Request, job lien.Job, wallclockLimitSeconds int64) (lien.LienResult, error)
	Release(req ledger.Request, job lien.Job) (ledger.Lien, error)
	Sweep(req ledger.Request) ([]ledger.Lien, error)
	Liens(node string, all bool) ([]ledger.Lien, error)
	JobLien(job lien.Job) (ledger.Lien, error)
	Charge(req ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error)
	Charges(job lien.Job) ([]ledger.Charge, error)
	Refund(req ledger.Request, spec lien.RefundSpec) (ledger.Charge, error)
	AddReservation(req ledger.Request, spec lien.ReservationSpec) (lien.Reservation, error)
	Reservations() ([]lien.Reservation, error)
	Flush(req ledger.Request, name string, running int64, end bool) (lien.FlushResult, error)

	// Registry is the bank's API clients; makesKeys lets a local bank make
	// its server key if it has none.
	Registry(makesKeys bool) (clientRegistry, error)
	Close() error
}

// clientRegistry is the API clients and their keys: *clients.Registry
// locally, the server's /v1/clients remotely.
type clientRegistry interface {
	Add(req ledger.Request, name string, role clients.Role, scope []string) (clients.Client, auth.Key, error)
	Rotate(req ledger.Request, name string) (clients.Client, auth.Key, error)
	Revoke(req ledger.Request, name, keyID string) (clients.Client, error)
	List() ([]clients.Client, error)
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
	return api.Settings{Settings: b.Ledger.Settings(), Created: b.Created(), Now: b.Now()}, nil
}

func (b localBank) Registry(makesKeys bool) (clientRegistry, error) {
	reg, err := openClients(b.cli, b.Ledger, makesKeys)
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// bank is what a command works on: the bank's operations, local or
// remote, and its settings as the command began.
type bank struct {
	bankService
	settings api.Settings
}

// precision is the bank's number of decimal places.
func (b bank) precision() int32 { return b.settings.Precision }

// withBank runs fn on the bank of this command: through the server with
// --server, else on the database file; then closes it.
func withBank(c *cli.Context, fn func(bank) error) error {
	svc, err := openService(c)
	if err != nil {
		return err
	}
	settings, err := svc.Settings()
	if err == nil {
		err = fn(bank{bankService: svc, settings: settings})
	}
	if cerr := svc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close bank: %w", cerr)
	}
	return err
}

func openService(c *cli.Context) (bankService, error) {
	if url := flagString(c, "server"); url != "" {
		return openRemote(c, url)
	}
	l, _, err := openBank(c, boltstore.Options{})
	if err != nil {
		return nil, err
	}
	return localBank{Ledger: l, Bank: lien.New(l), cli: c}, nil
}
