package main

import (
	"errors"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// Exit codes. Scripts depend on them: add, never renumber.
const (
	exitOK          = 0
	exitError       = 1 // anything not listed below: I/O, internal errors
	exitUsage       = 2 // bad command line or invalid input
	exitNotFound    = 3 // unknown node, user, machine, allocation, rate, charge; no lien for the job
	exitRefused     = 4 // valid but refused: insufficient funds, inactive, exists, request conflict, not a member, already charged, refund beyond the charge, unusable quote or reservation
	exitAudit       = 5 // the audit found problems
	exitUnavailable = 6 // the database cannot be opened (missing, locked, not a bank), or the server key
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
		errors.Is(err, lien.ErrRefund), errors.Is(err, lien.ErrQuote), errors.Is(err, lien.ErrReservation):
		return exitRefused
	case errors.Is(err, errAuditFailed):
		return exitAudit
	case errors.Is(err, boltstore.ErrLocked), errors.Is(err, ledger.ErrNotInitialized), errors.Is(err, errNoDatabase), errors.Is(err, clients.ErrServerKey):
		return exitUnavailable
	case errors.Is(err, ledger.ErrCorrupt):
		return exitCorrupt
	}
	return exitError
}
