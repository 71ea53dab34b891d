// Package boltstore is the embedded storage engine of ingot: a ledger.Store
// on a bbolt file and its write-ahead log (files PATH-wal.N beside it, see
// wal.go, and PATH-wal.next, a segment kept to be the next one, see
// spare.go; there are none after a clean Close). Copy a bank with Backup
// (ingot backup), never by copying the file alone while it is open.
//
// Files Open creates have 16 KiB pages (pageSize in store.go); a file
// made by an earlier version keeps its 4 KiB ones.
//
// Records are JSON in buckets, except where noted. Integer keys (journal sequence numbers,
// allocation ids) are 8-byte big-endian so that bbolt's byte order is their
// numeric order:
//
//	meta                   "schema" -> version, "settings" -> ledger.Settings,
//	                       "journal_head" -> seq ‖ time (Unix ns) of the newest entry (files
//	                       before sealing was deferred have its hash after them),
//	                       "log_applied" -> the newest group of the log the file holds,
//	                       "bank_id" -> 16 random bytes, which the log's segments carry
//	nodes                  name -> ledger.Node
//	users                  name -> ledger.User
//	machines               name -> ledger.Machine
//	allocations            id -> ledger.Allocation
//	allocations_by_account account NUL id -> (empty)
//	balance_history        id ‖ seq -> ledger.Allocation after entry seq
//	journal                seq -> SHA-256 ‖ canonical JSON of the entry (hash empty)
//	requests               client NUL request id -> content hash ‖ seq ‖ time ‖ the answer's JSON, or 0x01 ‖ a reference to entry seq (requests.go, ledger.AnswerReference)
//	liens                  id -> ledger.Lien
//	liens_by_job           machine NUL job id -> newest lien id
//	liens_active           account NUL expiry (Unix ns) ‖ id -> packed project and holds, while active
//	reserved               account NUL project -> running sum of its active liens' holds per allocation
//	charged                account NUL project -> running sum of its charges (less refunds) per allocation
//	reserved_total         account NUL -> the reserved sums of all its projects together
//	account_versions       account -> the version the newest journal entry that changed it gave it
//	liens_by_expiry        expiry (Unix ns) ‖ id -> (empty), while active
//	charges                id -> ledger.Charge
//	charges_by_job         machine NUL job id NUL id -> (empty)
//	records                kind NUL key -> ledger.Record
//
// Packed holds are, for each allocation, its id, the length of the
// amount's text and the text: balances read them on every lien and charge,
// so they avoid JSON.
//
// # Group commit, pipelined, with a write-ahead log
//
// Four goroutines share the work of Update (three on machines of fewer
// than four cores, where the syncer is the recorder too: recorderStage):
//
//   - The committer takes the calls that are waiting, at most half of all
//     the calls in the store (groupLimit), and runs them one after another
//     as a group, reading the file through an in-memory overlay of
//     the writes the file does not hold yet (overlay.go, merged.go) and
//     writing only to the overlay. It hands the group's writes on and runs
//     the next group at once. A call that fails has its writes undone in
//     the overlay; the others of its group are kept. Values a call leaves
//     to be made later (a request's answer: ledger.RequestRecord.Answer)
//     are made by whoever needs them first, once (deferred, overlay.go).
//     A write that a later write of the same group replaces (an account's
//     running sums, written once a call) is marked superseded: the log
//     record and the checkpoint leave it out, and its deferred value is
//     never made (session.record).
//   - The recorder makes each group's log record, and the deferred values
//     in it, while the syncer writes the groups before it: journal entries
//     among them, each sealed with the hash of the one before it, which
//     the recorder made first (groups and their writes are in order).
//   - The syncer appends all the groups waiting for it to the log, as one
//     write and one fdatasync, then publishes the state after them for
//     readers and answers their calls: no call returns before what it
//     wrote, and everything it read, is durable. A bbolt commit per group
//     rewrote every page the group touched and synced twice, and the
//     committer waited for it.
//   - The checkpointer applies durable groups to the bbolt buckets, at most
//     every checkpointEvery, many groups in one bbolt transaction that also
//     records the newest group applied ("log_applied"), and then removes the
//     log segments the file holds all of. The committer then drops those
//     groups' entries from the overlay. The syncer queues the durable groups
//     for it under a lock (durableQueue), without waking it.
//
// At most syncQueue groups wait for the recorder, and as many for the
// syncer (syncQueue in all where the syncer makes the records); beyond
// that the committer waits and calls gather into bigger groups. At most
// checkpointQueue syncs' groups wait for the checkpointer; beyond that
// the syncer waits.
//
// Opening a file applies the groups of the log newer than "log_applied" to
// it (read-only, it keeps them in memory instead), so a crash loses no
// acknowledged call: its group was in the log before it was answered. A
// record torn by the crash was never answered and is ignored. A log that
// does not fit the file (another bank's, or one starting after the groups
// the file holds, as beside an older copy of the file) is refused with
// ErrLogMismatch, and nothing is changed.
//
// If the log cannot be written (a full disk), the calls of that write get
// the error, and so do those of every group the committer ran on top of
// it; the committer undoes the groups after the last durable one (their
// undo records are kept until they are durable), publishes that state for
// readers, and the segment is cut back to its last whole record. A
// checkpoint that fails is tried again at the next one; the log keeps the
// groups meanwhile.
//
// Readers (View) read the durable state: the file through a copy of the
// overlay (copy-on-write B-trees) published by the syncer once its group is
// durable. The committer copies its overlay only when a reader asks: a
// reader that finds the published copy older than the durable state
// submits a call that wants a snapshot and waits for it (an idle committer
// runs it at once; a group of such calls writes nothing to the log).
// Copying after every group made the committer's next writes copy the
// B-tree nodes they touched, about a sixth of what a lien and charge
// allocated, for readers that mostly were not there. A reader checks that
// the file it opened is the one the copy was made against (between the
// copy's trim and its group) and asks again if a checkpoint came between.
//
// The small buckets nearly every change reads and the active-lien indexes
// and sums are held whole in memory (residentBuckets in overlay.go): their
// size follows the bank's structure and running jobs, not its history.
//
// The committer keeps decoded copies of the records nearly every change
// reads (nodes, users, machines, allocations, liens, rate tables): see
// cache.go for why that is exact. Bloom filters of the keys the file holds
// in the requests and job-lien buckets, and the journal's newest entry in
// the file, spare it the file's search for keys that are not there
// (filter.go).
package boltstore
