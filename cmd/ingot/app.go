package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// errNoDatabase is returned when neither --db nor --store (nor their
// variables) names a bank.
var errNoDatabase = errors.New("no database: pass --db FILE or set INGOT_DB (make run prints it), or --store URL for a bank in PostgreSQL")

// lockTimeout is how long a command waits for another ingot process that
// holds the database file.
const lockTimeout = 10 * time.Second

// run runs the command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := interruptible(context.Background())
	defer stop()
	answered := &progress.Writer{W: stdout}
	app := newApp(answered, stderr)
	asJSON := wantsJSON(args)
	app.ExitErrHandler = func(c *cli.Context, _ error) { asJSON = asJSON || flagBool(c, "json") }
	err := app.RunContext(ctx, interspersed(app, args))
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errInterrupted, err)
	}
	code := exitCode(err)
	switch {
	// An answer printed before the error (a quote not covered, an audit's
	// problems) holds it already: one JSON document on stdout, the
	// message on stderr.
	case err != nil && asJSON && answered.N() == 0:
		writeJSON(stdout, jsonError{Error: jsonErrorBody{Code: errorCode(err, code), Message: message(err), Exit: code}})
	case err != nil:
		fmt.Fprintf(stderr, "ingot: %s\n", message(err))
	}
	return code
}

// jsonError is an error as --json prints it, on standard output, where a
// script reads the command's answer.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	// Code is the API's code for what the bank refused (the same on the
	// file and through a server), or the command line's own (cliCodes).
	Code    string `json:"code"`
	Message string `json:"message"`
	Exit    int    `json:"exit"`
}

// wantsJSON reports whether args ask for --json before any "--": a
// command line that fails before its flags are read (an unknown flag) is
// answered in JSON too.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
}

// errInterrupted marks a command stopped by SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted")

// interruptible is ctx, cancelled at the first SIGINT (Ctrl-C) or SIGTERM,
// so that a long command stops where it is and removes what it had half
// made (a backup's or an archive's temporary file) rather than die with it
// left behind. A second signal ends the process as usual, in case the
// command does not stop. stop undoes it.
func interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-signals:
			cancel()
			signal.Stop(signals)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel()
	}
}

// message is what the user reads of err. An error from the server reads
// as the local command's would, without its code: the exit code carries it.
func message(err error) string {
	msg := err.Error()
	if e, ok := errors.AsType[*api.Error](err); ok {
		msg = strings.Replace(msg, e.Error(), e.Message, 1)
	}
	return msg
}

// commonFlags are accepted both before and after the command name.
func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "db", Usage: "bank database `FILE` (or INGOT_DB)"},
		storeFlag(),
		&cli.StringFlag{Name: "archive", Usage: "read the journal entries the bank moved to the archive `FILE` (made by ingot archive): statements, journals and balances of that time", EnvVars: []string{"INGOT_ARCHIVE"}},
		&cli.StringFlag{Name: "server", Usage: "work through the ingot server at `URL` (http://host:port, https://host:port, or unix:PATH for its local socket) instead of --db (or INGOT_SERVER; a --db or --store given beats it)"},
		&cli.StringFlag{Name: "ca-file", Usage: "check an https --server's certificate against the certificate authorities in PEM `FILE` rather than the system's", EnvVars: []string{"INGOT_CA_FILE"}},
		&cli.StringFlag{Name: "key-file", Usage: "the client key `FILE` (one line, KEYID:SECRET) that signs the requests to --server (or INGOT_KEY_FILE; --use-munge given beats it)"},
		&cli.BoolFlag{Name: "use-munge", Usage: "prove who you are to --server with a MUNGE credential instead of a key (or INGOT_USE_MUNGE=1; --key-file given beats it)"},
		&cli.StringFlag{Name: "munge-socket", Usage: "munged's socket `PATH`, for munge (--use-munge) and unmunge (serve --munge); default: theirs", EnvVars: []string{"INGOT_MUNGE_SOCKET"}},
		&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		&cli.BoolFlag{Name: "parsable", Aliases: []string{"P"}, Usage: "print '|'-separated fields with a header line"},
		&cli.StringFlag{Name: "request-id", Usage: "request `ID` that makes a change safe to retry (default: a new one, the time then random bytes)"},
	}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := appWithoutCommonFlags(stdout, stderr)
	addCommonFlags(app.Commands)
	return app
}

// appWithoutCommonFlags is ingot's app whose commands take only their own
// flags: newApp adds the common ones to each, so that they may follow the
// command; the manual lists them once.
func appWithoutCommonFlags(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:           "ingot",
		Usage:          "an allocation bank for HPC centres",
		Version:        version,
		Writer:         stdout,
		ErrWriter:      stderr,
		Suggest:        true,
		Flags:          commonFlags(),
		Action:         unknownCommand,
		ExitErrHandler: func(*cli.Context, error) {}, // run prints errors and picks the exit code
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err.Error()}
		},
		Commands: joinCommands(
			initCommands(),
			nodeCommands(),
			peopleCommands(),
			fundsCommands(), allocationCommands(),
			reportCommands(),
			adminCommands(),
			rateCommands(), policyCommands(), quoteCommands(), lienCommands(), chargeCommands(), reservationCommands(), hfsCommands(),
			clientCommands(),
			peerCommands(),
			serveCommands(), notifyCommands(), healthcheckCommands(), webCommands(),
			migrateCommands(),
			slurmCommands(),
			versionCommands(),
			completionCommands(),
		),
	}
}

func joinCommands(groups ...[]*cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// unknownCommand is the action of ingot and of each command group (`ingot
// lien`): their help without arguments, else a usage error (exit 2) naming
// the word and the command nearest to it.
func unknownCommand(c *cli.Context) error {
	if !c.Args().Present() {
		return cli.ShowSubcommandHelp(c)
	}
	word := c.Args().First()
	msg := fmt.Sprintf("%q is not a command of %s", word, c.Command.HelpName)
	if near := cli.SuggestCommand(c.Command.Subcommands, word); near != "" {
		msg += "; " + strings.ToLower(near[:1]) + near[1:]
	}
	return usageError{msg + fmt.Sprintf(" (`%s --help` lists them)", c.Command.HelpName)}
}

// addCommonFlags gives every command that has an action of its own (leaves,
// and `quote` and `charge`, which also have subcommands) the common flags,
// and every command the usage error handler, so `ingot balance --json`
// works like `ingot --json balance`.
func addCommonFlags(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageError{err.Error()} }
		if c.SkipFlagParsing {
			continue
		}
		if len(c.Subcommands) > 0 {
			addCommonFlags(c.Subcommands)
			if c.Action == nil {
				c.Action = unknownCommand
				continue
			}
		}
		c.Flags = append(c.Flags, commandFlags()...)
	}
}

// commandFlags are the common flags as a command takes them after its
// name: without their environment variables, which the application's
// flags read. A flag given on the command line then wins over the
// environment wherever it stands: the command's copy holds only what was
// given after the name, the application's what was given before it, or
// else the environment's value (flagString looks in that order).
func commandFlags() []cli.Flag {
	flags := commonFlags()
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.EnvVars = nil
		case *cli.BoolFlag:
			f.EnvVars = nil
		}
	}
	return flags
}

// flagString is the first non-empty value of a flag given at any level,
// else, for a flag of alternativeGroups, its variable's (precedence.go).
func flagString(c *cli.Context, name string) string {
	for _, ctx := range c.Lineage() {
		if v := ctx.String(name); v != "" {
			return v
		}
	}
	return fromVariable(c, name)
}

// flagBool reports whether a flag was given at any level, or, for a flag
// of alternativeGroups, set by its variable (precedence.go).
func flagBool(c *cli.Context, name string) bool {
	for _, ctx := range c.Lineage() {
		if ctx.Bool(name) {
			return true
		}
	}
	on, err := strconv.ParseBool(fromVariable(c, name))
	return err == nil && on
}

// openBank opens the bank of --db or --store for the length of one
// command, with the store's options opts (see openStore; an upgrade is
// reported on stderr unless opts say otherwise).
func openBank(c *cli.Context, opts boltstore.Options) (*ledger.Ledger, ledger.Store, error) {
	if opts.OnUpgrade == nil {
		opts.OnUpgrade = reportUpgrade(c)
	}
	upgrading := progress.NewSteps(c.App.ErrWriter, "upgrade")
	if opts.OnUpgradeProgress == nil {
		opts.OnUpgradeProgress = func(step string, done, total int64) {
			unit := "journal entries"
			if step == boltstore.UpgradeStepCopy {
				unit = "bytes"
			}
			upgrading.Set(step, unit, done, total)
		}
	}
	store, name, err := openStore(c, opts)
	upgrading.Stop()
	if err != nil {
		return nil, nil, err
	}
	noteUnusedServer(c)
	var ledgerOpts []ledger.Option
	if path := flagString(c, "archive"); path != "" {
		archive, err := boltstore.Open(path, boltstore.Options{ReadOnly: true, LockTimeout: lockTimeout})
		if err != nil {
			store.Close()
			return nil, nil, fmt.Errorf("--archive %s: %w", path, err)
		}
		ledgerOpts = append(ledgerOpts, ledger.WithArchive(archive))
	}
	l, err := ledger.Open(c.Context, store, ledgerOpts...)
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return l, store, nil
}

// withStore runs fn on the bank opened for this command, with the store's
// options, and closes it: for serve, which works on the store itself.
func withStore(c *cli.Context, opts boltstore.Options, fn func(*ledger.Ledger, ledger.Store) error) error {
	l, store, err := openBank(c, opts)
	if err != nil {
		return err
	}
	err = fn(l, store)
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close bank: %w", cerr)
	}
	return err
}

// localOnly refuses --server for an action that works on the local
// database file, or on no bank at all.
func localOnly(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if flagString(c, "server") != "" {
			return usageError{fmt.Sprintf("ingot %s works on this machine and does not go through --server (unset INGOT_SERVER, or run it on the server's host)", commandPath(c))}
		}
		return action(c)
	}
}

// serverKeyFlag is --server-key, for the commands that open the client
// registry (client, serve).
func serverKeyFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "server-key", EnvVars: []string{"INGOT_SERVER_KEY"},
		Usage: "the server key `FILE` that seals client secrets (default: server.key beside the database; made by the first client add or serve --first-admin-key)"}
}

// openClients returns the client registry of bank l, loading the server
// key; create makes it if it is missing (only commands that make keys do:
// a server started with a mistyped path must stop, not seal with a new key).
func openClients(c *cli.Context, l *ledger.Ledger, create bool) (*clients.Registry, error) {
	path := c.String("server-key")
	if path == "" && flagString(c, "store") != "" {
		return nil, usageError{"a bank in PostgreSQL has no directory for its server key: give its file with --server-key (or INGOT_SERVER_KEY), the same file to every server of the bank"}
	}
	if path == "" {
		path = filepath.Join(filepath.Dir(flagString(c, "db")), "server.key")
	}
	key, created, err := clients.LoadServerKey(path, create)
	if err != nil {
		return nil, err
	}
	if created {
		fmt.Fprintf(c.App.ErrWriter, "created server key %s: keep it with the database, back it up apart from it\n", path)
	}
	return clients.New(l, key)
}

// request is the identity of a change made from this command line: the
// local user, and --request-id or a new one (client.NewRequestID: ids that
// grow with time are the cheapest for the bank to keep).
func request(c *cli.Context) ledger.Request {
	actor := "local"
	if u, err := user.Current(); err == nil {
		actor = "local:" + u.Username
	}
	id := flagString(c, "request-id")
	if id == "" {
		id = client.NewRequestID()
	}
	return ledger.Request{Actor: actor, ID: id}
}

// args checks the number of positional arguments and returns them.
func args(c *cli.Context, names ...string) ([]string, error) {
	got := c.Args().Slice()
	if len(got) != len(names) && len(names) == 0 {
		return nil, usageError{fmt.Sprintf("%s takes no arguments (got %q)", commandPath(c), got)}
	}
	if len(got) != len(names) {
		return nil, usageError{fmt.Sprintf("%s takes %d argument(s): %s (got %d)", commandPath(c), len(names), strings.Join(names, " "), len(got))}
	}
	return got, nil
}

// commandPath is the command as typed, without the program name ("lien
// show"): urfave/cli's FullName gives only the last word of a subcommand.
func commandPath(c *cli.Context) string {
	return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
}

func parseTimeFlag(c *cli.Context, name string) (time.Time, error) {
	s := c.String(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := ledger.ParseTime(s, time.Now(), time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s: %w", name, err)
	}
	return t, nil
}
