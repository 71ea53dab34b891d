// Package ledger is ingot's bank: the node tree (accounts and their nested
// projects), users, machines, allocations, the hash-chained journal, balances,
// statements and the audit.
//
// # Model
//
// A node is named with dots: "chem" is an account (top level), "chem.lab1" a
// project inside it. Only accounts hold allocations; a project draws on its
// account's allocations. An allocation has a remaining amount, what was
// deposited into it, a credit limit, and a validity window [Start, End): it
// counts only while active (use it or lose it). A zero End means no end.
//
// Balances follow Gold: Amount is the sum of the remaining amounts of the
// active allocations, Reserved the sum of the liens held on them, Balance =
// Amount - Reserved, Available = Balance + the credit limits.
//
// Funds leave allocations in debit order (see DebitOrder): earliest end
// first, machine-specific before any-machine on a tie, then lowest id.
//
// # Liens, charges and HFS
//
// The ledger stores liens (credits held for running jobs) and charges
// (usage records), and counts them in balances: Reserved sums the holds of
// active liens before their expiry, so an expired lien stops counting at
// once. Funds chooses holds and debits (a charge may overdraw; a hold may
// not). What a lien or charge costs, and when it is placed, is package
// lien's business; it builds on Mutate and Writer.
//
// An account's credits are split among its projects by HFS (share.go):
// a project's liens must fit within its HFS availability as well as the
// account's funds. An account whose tree carries no HFS policy is not split.
// Projects may own credits (Policy.Ownership); a lien refused for an owner
// that has less than it owns names the running jobs whose release lets it
// through (preempt.go). The ledger never releases them itself.
//
// # Journal
//
// Every change is one Entry, written in the same store transaction as the
// change itself. Entries are numbered from 1, never rewritten, and chained:
// each carries the SHA-256 of its predecessor. Amount changes are journaled as
// deltas, so replaying the journal (Audit) recomputes every allocation
// independently of the stored state; any difference is reported. An
// entry's hash is that of its bytes as stored, in the binary layout of
// binary.go (JSON before schema 12, still read), which a full audit
// hashes and decodes for every entry.
//
// Entry times never go backwards: an entry is stamped max(now, previous
// entry's time), so "the state at time T" is always a prefix of the journal.
//
// The oldest entries may be moved to an archive (Archive, archive.go): a
// store of their own, which is a bank that audits on its own. The bank
// then starts at a Boundary, the state the archived entries gave, and
// its queries about them read the archive given (WithArchive) through a
// transaction that joins the two (joinedTx), or say which they need.
//
// # Idempotency
//
// Every mutation carries a request id. The first answer is recorded with the
// request; a retry with the same id and the same content gets that answer
// again without a second change, and the same id with other content is refused
// with ErrRequestConflict.
//
// # Storage
//
// The ledger is written once against the narrow Store interface; engines
// live in subpackages (boltstore). Store.Update may run a function more than
// once and may commit it together with other callers' functions (group
// commit), so mutation functions keep all their effects inside the
// transaction.
package ledger
