package ledger

import "errors"

// Sentinel errors. Callers test with errors.Is; messages carry the context.
// The wire protocol maps each to a stable code, so add, never rename.
var (
	// ErrInvalid marks input that can never succeed: a malformed amount,
	// name, time or option.
	ErrInvalid = errors.New("ledger: invalid input")
	// ErrNotFound marks an unknown node, user, machine or allocation.
	ErrNotFound = errors.New("ledger: not found")
	// ErrExists marks a name that is already taken.
	ErrExists = errors.New("ledger: already exists")
	// ErrInactive marks an operation on a deactivated node, user or machine.
	ErrInactive = errors.New("ledger: inactive")
	// ErrInsufficientFunds marks a withdrawal or transfer beyond Available.
	ErrInsufficientFunds = errors.New("ledger: insufficient funds")
	// ErrRequestConflict marks a request id reused with other content.
	ErrRequestConflict = errors.New("ledger: request id reused with different content")
	// ErrNotInitialized marks a store that holds no bank yet.
	ErrNotInitialized = errors.New("ledger: no bank in this database")
	// ErrCorrupt marks stored data that cannot be decoded or is inconsistent.
	ErrCorrupt = errors.New("ledger: corrupt data")
	// ErrUnavailable marks a store that cannot be reached for now (a
	// database server lost or failing over), or that could not tell
	// whether a change was made: a retry with the same request id makes
	// it once.
	ErrUnavailable = errors.New("ledger: storage unavailable")
	// ErrUpgradeNeeded marks a bank of an earlier schema opened for
	// reading only: reading never rewrites a bank, and this ingot reads
	// only its own schema.
	ErrUpgradeNeeded = errors.New("ledger: the bank must be upgraded first")
)
