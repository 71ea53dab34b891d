// Package pgstore is the PostgreSQL engine of ingot: a ledger.Store in a
// PostgreSQL database, through pgx, for sites that serve one bank from
// several ingot processes and keep it on a primary with a standby. A
// connection string may name several hosts with
// target_session_attrs=read-write (as libpq takes it): after a failover
// new connections go to the new primary.
//
// # Group commit
//
// As in boltstore, one committer goroutine takes every Update call that is
// waiting (at most maxGroup) and runs them, one after another, in one SQL
// transaction. The transaction commits, and only then are the calls
// answered. One commit, and one wait for PostgreSQL's flush and its
// synchronous standby, serves the group.
//
// What bounds the committer is round trips and statements, made while
// the head (below) is locked: PostgreSQL spends most of a small write on
// the statement, not the row. A call reads through a record cache
// (internal/recordcache; the cache knows the ledger's indexes that every
// change reads: a job's newest lien, an account's allocations, the jobs
// without charges, a bound under the account's lien expiries), and its
// writes wait in memory as rows, the last written of each record
// (pending.go), until the group's end, where each table's rows go as one
// statement that takes them as arrays, all in one round trip with the
// counters and the head. A read that could see a write waiting sends the
// writes first (one of a record or index entry only when a write waiting
// is of it). A call of the lien + charge cycle makes two round trips of
// reads of its own (its request and its job), and a group of 64 calls a
// dozen statements of writes. The cache is exact only while this store
// alone writes the bank: a group that changed anything writes the head
// row, so that the row's xmin names it, and a group that finds another
// transaction's xmin there starts the cache again empty.
//
// A call whose function fails before any write of it reached PostgreSQL
// (a refusal: the ledger checks before it writes) gets its error, its
// writes dropped, and the others go on. One that fails after, or one of
// whose statements PostgreSQL refuses (which aborts the transaction),
// fails, and the group runs again without it, as boltstore's does: no
// call pays for a savepoint. A refused statement that held several calls'
// rows names none of them: the group then runs again carefully, each
// call's rows sent as it ends, which finds the call to fail.
//
// # Several servers on one bank
//
// The group's transaction first takes the journal's head row (FOR
// UPDATE), so that the writers of a bank, in this process or any other,
// run one after another. Under READ COMMITTED each later statement of the
// transaction sees everything committed before the lock was granted: a
// change reads the latest state, as under bbolt's single writer. This is
// what keeps the hash chain from forking (two groups never append after
// the same entry) and a project from being oversubscribed (a lien's check
// of the account's funds and sums, and its hold, happen under the same
// lock), and what makes a request id seen by one server seen by the
// other (requests' primary key is the client and the id). The ledger
// itself takes no lock: the engine serialises its writers.
//
// The other ways were considered. Taking the account's running sums (the
// record the ledger reads in Writer.Funds) FOR UPDATE would let groups of
// different accounts run side by side, but every append still needs the
// head, and a change of two accounts (a transfer) takes account locks in
// its own order: groups would deadlock, and a deadlock aborts a whole
// group. SERIALIZABLE transactions would abort one of two groups whenever
// both touch one account, the common case when many jobs draw on few
// accounts, and each retry runs a whole group again. One lock costs what
// it serialises, groups rather than calls: group commit amortises it as it
// amortises the commit.
//
// Allocation, lien and charge ids come from the counters table (through
// the cache), which the group's transaction moves, at its end, past the
// ids its calls took and stored: a call that fails gives its id back, as
// in bbolt (a sequence would leave gaps).
//
// # Failures
//
// A group whose transaction fails before its COMMIT was sent (the
// connection lost, the server shutting down, a standby not yet promoted)
// committed nothing: it runs again on a new connection, for up to
// Options.RetryFor, its functions with it (ledger.Store allows that). A
// connection lost during the COMMIT leaves its outcome unknown: its calls
// get ErrCommitUnknown, and a client's retry with the same request id
// gets the first answer if it was made and applies it otherwise. Unlike
// bbolt, a failed commit does not stop the store: PostgreSQL owns
// durability (a failed fsync stops the server, and its recovery replays
// its log). Sessions end an idle transaction after a minute, so that a
// writer cut off from the bank does not hold the head, and so every other
// server, for longer.
//
// Reads (View) run in REPEATABLE READ, READ ONLY transactions: one
// snapshot each, on a pool of connections of their own (pool_max_conns in
// the connection string sizes it); the committer has a connection of its
// own. Iterators read pages of rows, so that the function they
// call may run statements of its own.
//
// # Schema
//
// The bank lives in the connection's current schema (public, unless the
// connection string sets search_path). Its tables are made by numbered
// migrations built into ingot (migrations/NNNN_*.sql), the schema's
// number kept in schema_version. Open refuses a database with tables but
// no schema_version (another program's: ErrNotBank) and one of a newer
// schema (ErrNewerSchema), writing nothing to either; it makes the schema
// in an empty database only if asked (Options.Create). An older schema is
// upgraded in one transaction, under an advisory lock, once any group of
// a server still running the older ingot has ended: those servers then
// refuse every change (each group reads the schema's number with the
// head).
//
//	schema_version   version -> when it was applied
//	settings         the bank's ledger.Settings
//	journal_head     the newest entry's seq, time and SHA-256: the row every writer locks
//	counters         allocations, liens, charges -> the last id given
//	nodes, users, machines  name -> the record
//	allocations      id, account, end (Unix ns; since schema 4), start (Unix ns, since schema 7; NULL unless
//	                 it starts after it was made and no change has found it started), used_up (since schema 8:
//	                 ledger.Allocation.UsedUp) -> ledger.Allocation, indexed by account and end where the start
//	                 is NULL (apart for those used up), by account and start where it is not: the allocations
//	                 active now (ActiveAllocations), those used up (UsedUpAllocations), those that have not
//	                 ended (LiveAllocations), those that start later, the next first (NextStart,
//	                 UpcomingAllocations)
//	balance_history  allocation, seq -> the allocation after entry seq
//	journal          seq -> time, SHA-256, the entry's bytes as hashed
//	journal_nodes    node, seq: the entries that concern each node, and (since schema 5) each job and
//	                 each kind of the few a day, under their terms (ledger.IndexTerms)
//	requests         client, request id -> content hash, seq, time, the answer's JSON
//	liens            id, account, machine, job, active, expiry (Unix ns) -> ledger.Lien while it is
//	                 active, then the journal entry that finished it (carrier: it carries the lien
//	                 whole); indexed by machine and job, and while active by account and expiry
//	charges          id, machine, job -> the journal entry that made, or last refunded, the
//	                 charge (carrier; before schema 3 the ledger.Charge), indexed by machine and job
//	records          kind, key -> the record's value (running sums, the audit's checkpoint)
//
// Records are the ledger's JSON in json columns (kept as written, so
// amounts stay the ledger's decimal strings and nothing is encoded
// again); names and keys sort in byte order (COLLATE "C"), as the store
// contract lists them.
//
// # Backup and check
//
// Backup writes the bank, from one snapshot taken while the others go on,
// as a SQL script: the migrations, then every table's rows in COPY's text
// format, in one transaction. psql restores it into an empty database.
// It is ingot's own rather than pg_dump's, which would need a pg_dump of
// the server's version on the host ingot runs on; a site's point-in-time
// recovery is PostgreSQL's (pg_basebackup, WAL archiving).
//
// Check checks what PostgreSQL does not: the schema and its tables,
// constraints validated and triggers enabled, the head row against the
// newest entry and the journal numbered without a gap, counters ahead of
// the ids they gave, the node index against the journal, and the columns
// the indexes are on against the records.
package pgstore
