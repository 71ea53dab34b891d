package main

import (
	"errors"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// Exit codes. Scripts depend on them: add, never renumber.
const (
	exitOK          = 0
	exitError       = 1 // anything not listed below: I/O, internal errors
	exitUsage       = 2 // bad command line or invalid input
	exitNotFound    = 3 // unknown node, user, machine or allocation
	exitRefused     = 4 // valid but refused: insufficient funds, inactive, exists, request conflict
	exitAudit       = 5 // the audit found problems
	exitUnavailable = 6 // the database cannot be opened: missing, locked, not a bank
	exitCorrupt     = 7 // stored data is damaged
)

// usageError marks a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// auditFailed is returned when an audit ran and found problems.
var errAuditFailed = errors.New("audit failed")

func exitCode(err error) int {
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage), errors.Is(err, ledger.ErrInvalid):
		return exitUsage
	case errors.Is(err, ledger.ErrNotFound):
		return exitNotFound
	case errors.Is(err, ledger.ErrInsufficientFunds), errors.Is(err, ledger.ErrInactive),
		errors.Is(err, ledger.ErrExists), errors.Is(err, ledger.ErrRequestConflict):
		return exitRefused
	case errors.Is(err, errAuditFailed):
		return exitAudit
	case errors.Is(err, boltstore.ErrLocked), errors.Is(err, ledger.ErrNotInitialized), errors.Is(err, errNoDatabase):
		return exitUnavailable
	case errors.Is(err, ledger.ErrCorrupt):
		return exitCorrupt
	}
	return exitError
}
