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
// # Group commit
//
// All writers go through one committer goroutine. It takes every Update
// call that is waiting, runs them one after another in a single bbolt
// transaction, and commits once: one fsync for the whole group. A function
// that fails before writing anything simply gets its error; one that fails
// after writing rolls the group back, and the group is run again without it
// (so functions must be safe to run more than once, as ledger.Store says).
// An idle store commits a lone call at once: there is no batching delay.
//
// The committer keeps decoded copies of the records nearly every change
// reads (nodes, users, machines, allocations, rate tables): see cache.go for
// why that is exact.
package boltstore
