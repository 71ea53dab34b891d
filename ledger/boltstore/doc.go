// Package boltstore is the embedded storage engine of ingot: a ledger.Store
// on one bbolt file.
//
// Records are JSON in buckets, except where noted. Integer keys (journal sequence numbers,
// allocation ids) are 8-byte big-endian so that bbolt's byte order is their
// numeric order:
//
//	meta                   "schema" -> version, "settings" -> ledger.Settings,
//	                       "journal_head" -> seq ‖ time (Unix ns) ‖ hash of the newest entry
//	nodes                  name -> ledger.Node
//	users                  name -> ledger.User
//	machines               name -> ledger.Machine
//	allocations            id -> ledger.Allocation
//	allocations_by_account account NUL id -> (empty)
//	balance_history        id ‖ seq -> ledger.Allocation after entry seq
//	journal                seq -> SHA-256 ‖ canonical JSON of the entry (hash empty)
//	requests               client NUL request id -> content hash ‖ seq ‖ time ‖ the answer's JSON (requests.go)
//	liens                  id -> ledger.Lien
//	liens_by_job           machine NUL job id -> newest lien id
//	liens_active           account NUL expiry (Unix ns) ‖ id -> packed project and holds, while active
//	reserved               account NUL project -> running sum of its active liens' holds per allocation
//	charged                account NUL project -> running sum of its charges (less refunds) per allocation
//	reserved_total         account NUL -> the reserved sums of all its projects together
//	account_versions       account -> hash of the newest journal entry that changed it
//	liens_by_expiry        expiry (Unix ns) ‖ id -> (empty), while active
//	charges                id -> ledger.Charge
//	charges_by_job         machine NUL job id NUL id -> (empty)
//	records                kind NUL key -> ledger.Record
//
// Packed holds are, for each allocation, its id, the length of the
// amount's text and the text: balances read them on every lien and charge,
// so they avoid JSON.
//
// # Group commit, pipelined
//
// All writers go through one committer goroutine. It takes every Update
// call that is waiting and runs them one after another as a group, reading
// the file through an in-memory overlay of the writes that are not in the
// file yet (overlay.go, merged.go) and writing only to the overlay. It then
// hands the group's writes to the syncer goroutine and runs the next group
// at once. The syncer applies all the groups waiting for it to the buckets
// in one bbolt transaction and commits (one fsync for all of them), and
// only then answers their calls: no call returns before what it wrote, and
// everything it read, is in the file. So the committer's work and the
// disk's overlap, where one bbolt transaction per group made each wait for
// the other. At most syncQueue groups wait for the syncer; beyond that the
// committer waits and calls gather into bigger groups.
//
// A call that fails has its writes undone in the overlay; the others of its
// group are kept (functions still must be safe to run more than once, as
// ledger.Store says, for other engines). If the syncer cannot commit (a
// full disk), the calls of that transaction get the error, and so do those
// of every group the committer ran on top of it; the committer then drops
// the overlay and reads the file alone again.
//
// Readers (View) read the file, in a bbolt read transaction: they see only
// what is durable, and a writer's own changes once its Update has returned.
// The overlay keeps only what is not in the file yet: once the syncer has
// committed a group, its entries are dropped (unless a newer group wrote
// the same key).
//
// The committer keeps decoded copies of the records nearly every change
// reads (nodes, users, machines, allocations, liens, rate tables): see
// cache.go for why that is exact.
package boltstore
