package pgstore

import "errors"

var (
	// ErrClosed is returned by calls on a closed store.
	ErrClosed = errors.New("pgstore: store is closed")
	// ErrReadOnly is returned by writes in a View, and by Update on a
	// store opened read-only.
	ErrReadOnly = errors.New("pgstore: store is opened read-only")
	// ErrConnect is returned by Open when PostgreSQL cannot be reached or
	// refuses the connection (a wrong password, an unknown database).
	ErrConnect = errors.New("pgstore: cannot connect to PostgreSQL")
	// ErrNotBank is returned by Open for a database that holds another
	// program's tables: it is never written to.
	ErrNotBank = errors.New("pgstore: the database is not an ingot bank")
	// ErrNewerSchema is returned by Open, and by Update once another
	// process has upgraded the schema, for a bank of a schema newer than
	// this ingot's.
	ErrNewerSchema = errors.New("pgstore: the bank was made by a newer ingot")
	// ErrCommitUnknown is returned by Update when the connection failed
	// while its group was committing: the change may or may not have been
	// made, and a retry with the same request id applies it once. It comes
	// with ledger.ErrUnavailable, as do the failures of a connection that
	// outlast Options.RetryFor.
	ErrCommitUnknown = errors.New("pgstore: the connection to PostgreSQL failed during a commit, whose outcome is unknown")
)
