package main

import (
	"errors"
	"net/url"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/munge"
)

// Exit codes. Scripts depend on them: add, never renumber.
const (
	exitOK          = 0
	exitError       = 1 // anything not listed below: I/O, internal errors
	exitUsage       = 2 // bad command line or invalid input
	exitNotFound    = 3 // unknown node, user, machine, allocation, rate, charge; no lien for the job
	exitRefused     = 4 // valid but refused: insufficient funds, inactive, exists, request conflict, not a member, already charged, refund beyond the charge, unusable quote or reservation
	exitAudit       = 5 // the audit found problems, or peer reconcile differences
	exitUnavailable = 6 // the database cannot be opened (missing, locked, unreachable, the login refused, not a bank, a schema this ingot does not open), or the server key; the server cannot be reached or is busy, or the client holds as many sign-in links as it may
	exitCorrupt     = 7 // stored data is damaged
	exitAuth        = 8 // with --server: no usable key file, or the server refused the key (401)
	// exitInterrupted is what shells report for a command killed by
	// SIGINT (128+2): the command stopped at the signal, cleaned up, and
	// did not finish.
	exitInterrupted = 130
)

// exitCodes are the exit codes and what each means: the table of README.md
// (Exit codes), which a test holds equal to this one, and the manual's EXIT
// STATUS (manpage.go). A code added above is added here.
var exitCodes = []struct {
	code    int
	meaning string // Markdown: `code` spans
}{
	{exitOK, "success"},
	{exitError, "any other error (I/O, internal)"},
	{exitUsage, "bad command line or invalid input: unknown command or flag, wrong number of arguments, a bad amount, name, time or option, an unknown `help` topic"},
	{exitNotFound, "not found: unknown node, user, machine, allocation, lien or charge"},
	{exitRefused, "refused: insufficient funds, inactive node, name taken, request id reused, user not a member, job already charged, refund beyond the charge, quote used up, reservation unknown or ended; a destructive command not confirmed on a terminal"},
	{exitAudit, "the audit found problems, or `peer reconcile` found differences (they are printed)"},
	{exitUnavailable, "the database cannot be used: no `--db` or `--store`, missing file, not a bank, PostgreSQL unreachable or refusing the login, locked by another process for 10 s, a schema this ingot does not open (a newer ingot's, or schema 1), a bank of an earlier ingot left with its write-ahead log, one of an earlier schema for a command that only reads, a change to a bank file this process may not write; or the server cannot be reached or is busy; MUNGE cannot be run (`--use-munge` without munged)"},
	{exitCorrupt, "stored data is damaged"},
	{exitAuth, "with `--server`: no usable key file, or the server refused the key (unknown, revoked, wrong secret, clock more than 5 minutes off)"},
	{exitInterrupted, "stopped by Ctrl-C (SIGINT) or SIGTERM before it finished, having removed what it had half made (a backup's temporary file); a second signal ends it at once"},
}

// usageError marks a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// auditFailed is returned when an audit ran and found problems.
var errAuditFailed = errors.New("audit failed")

// errDifferences is returned when peer reconcile found differences: an
// audit of the two banks' records that found problems.
var errDifferences = errors.New("peer reconcile found differences")

// serverExitCodes are the exit codes of the server's error codes: the same
// as the local command's for the same refusal. A client that its role or
// scope does not allow (403 forbidden) is refused (4), like any valid
// request the bank refuses; a key the server does not accept (401) has a
// code of its own (8). A code missing here (an endpoint the server does
// not have: a server older than the command line) is 1.
var serverExitCodes = map[api.Code]int{
	api.CodeInvalid:             exitUsage,
	api.CodeBadJSON:             exitUsage,
	api.CodeMissingRequestID:    exitUsage,
	api.CodeTooLarge:            exitUsage,
	api.CodeInvalidUTF8:         exitUsage,
	api.CodeDuplicateKey:        exitUsage,
	api.CodeKeySpelling:         exitUsage,
	api.CodeControlCharacter:    exitUsage,
	api.CodeNotFound:            exitNotFound,
	api.CodeExists:              exitRefused,
	api.CodeInactive:            exitRefused,
	api.CodeInsufficientFunds:   exitRefused,
	api.CodeRequestConflict:     exitRefused,
	api.CodeNoProject:           exitRefused,
	api.CodeNotMember:           exitRefused,
	api.CodeAlreadyCharged:      exitRefused,
	api.CodeRefund:              exitRefused,
	api.CodeQuoteUnusable:       exitRefused,
	api.CodeReservationUnusable: exitRefused,
	api.CodeForbidden:           exitRefused,
	api.CodeUnauthenticated:     exitAuth,
	api.CodeUnavailable:         exitUnavailable,
	api.CodeTooManyRequests:     exitUnavailable,
	api.CodeCorrupt:             exitCorrupt,
}

func exitCode(err error) int {
	var usage usageError
	if e, ok := errors.AsType[*api.Error](err); ok {
		if code, listed := serverExitCodes[e.Code]; listed {
			return code
		}
		return exitError
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.Is(err, errNoKey):
		return exitAuth
	case isUnreachable(err):
		return exitUnavailable
	// urfave/cli's own exit errors come only from its help command (an
	// unknown topic): a mistake on the command line.
	case errors.As(err, &usage), errors.Is(err, ledger.ErrInvalid), isCLIExit(err):
		return exitUsage
	// Lack of funds first: a refused lien whose fallback is missing wraps
	// both, and it is the refusal that matters.
	case errors.Is(err, ledger.ErrInsufficientFunds):
		return exitRefused
	case errors.Is(err, ledger.ErrNotFound): // lien.ErrNoLien is one
		return exitNotFound
	// Valid requests the bank's state refuses. A reservation that is
	// unknown or ended is one error in package lien, so it is refused here
	// rather than split between "not found" and "refused".
	case errors.Is(err, ledger.ErrInactive), errors.Is(err, ledger.ErrExists), errors.Is(err, ledger.ErrRequestConflict),
		errors.Is(err, lien.ErrNoProject), errors.Is(err, lien.ErrNotMember), errors.Is(err, lien.ErrAlreadyCharged),
		errors.Is(err, lien.ErrRefund), errors.Is(err, lien.ErrQuote), errors.Is(err, lien.ErrReservation), errors.Is(err, errNotConfirmed):
		return exitRefused
	case errors.Is(err, errAuditFailed), errors.Is(err, errDifferences):
		return exitAudit
	case errors.Is(err, boltstore.ErrLocked), errors.Is(err, ledger.ErrNotInitialized), errors.Is(err, errNoDatabase), errors.Is(err, clients.ErrServerKey),
		errors.Is(err, boltstore.ErrNewerSchema), errors.Is(err, boltstore.ErrOldSchema), errors.Is(err, boltstore.ErrLogLeft),
		errors.Is(err, pgstore.ErrConnect), errors.Is(err, pgstore.ErrNotBank), errors.Is(err, pgstore.ErrNewerSchema), errors.Is(err, ledger.ErrUnavailable),
		errors.Is(err, ledger.ErrUpgradeNeeded), errors.Is(err, boltstore.ErrReadOnly), errors.Is(err, pgstore.ErrReadOnly),
		errors.Is(err, munge.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, ledger.ErrCorrupt):
		return exitCorrupt
	}
	return exitError
}

func isCLIExit(err error) bool {
	_, ok := errors.AsType[cli.ExitCoder](err)
	return ok
}

// isUnreachable reports whether err is a failure to reach the server.
func isUnreachable(err error) bool {
	_, ok := errors.AsType[*url.Error](err)
	return ok
}

// cliCodes are the codes of --json's errors that are not the bank's
// refusals (api.Code), by exit code.
var cliCodes = map[int]string{
	exitError:       "error",
	exitUsage:       "usage",
	exitNotFound:    "not_found",
	exitRefused:     "refused",
	exitAudit:       "audit_failed",
	exitUnavailable: "unavailable",
	exitCorrupt:     "corrupt",
	exitAuth:        "unauthenticated",
	exitInterrupted: "interrupted",
}

// errorCode is the code --json gives err, which exits with exit: the
// API's code where the bank refused (api.CodeOf), else the command line's.
func errorCode(err error, exit int) string {
	if code := api.CodeOf(err); code != api.CodeInternal {
		return string(code)
	}
	return cliCodes[exit]
}
