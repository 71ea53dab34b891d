// Package groupcommit hands the changes of a store's callers to its one
// committer in groups, which is how both engines (ledger/boltstore and
// ledger/pgstore) make many small changes durable at the cost of one
// commit: Submit queues a caller's function and waits for its outcome;
// Run, the committer's loop, takes every call waiting, up to a bound, and
// passes them to the engine's commit as one group, which answers each;
// when the last group had company it first waits a moment for more
// (commitDelay).
//
// Once the committer has a call, its caller waits for the outcome whatever
// its context says: it must know whether its change was applied. A call
// still queued when Stop is called is answered with the engine's closed
// error.
package groupcommit
