// Package boltstore is the embedded storage engine of ingot: a ledger.Store
// in one bbolt file. bbolt alone makes a change durable: there is no log of
// ingot's own beside the file. Copy a bank with Backup (ingot backup),
// never by copying the file alone while it is open.
//
// # Group commit
//
// One committer goroutine takes every Update call that is waiting and runs
// them, one after another, in one bbolt read-write transaction; it commits
// (bbolt's own fdatasync of the pages, then of the meta page) and only
// then answers them. One commit serves many calls, which is where the
// throughput comes from. A call whose function fails without having
// written anything just gets its error; one that fails after writing has
// its writes in the transaction, so the committer rolls the transaction
// back and runs the group again without it (functions may run more than
// once: ledger.Store). A call whose context is done before its group runs
// is not run.
//
// If a commit fails, its calls get the error. A write refused for lack of
// space (ENOSPC, EDQUOT) leaves the file as it was, since bbolt writes a
// commit's pages where the current state does not reach and its meta page
// last, so the store goes on and the next commit may find the space. Any
// other failure (a failed fsync) stops the store: every later Update is
// refused until the bank is opened again, since after a failed fsync
// nobody knows what the file holds (the change may even have reached the
// disk: a client's retry with the same request id then gets its answer,
// and otherwise applies it).
//
// # A damaged file
//
// bbolt trusts its pages: a damaged one makes it panic, and a file cut
// short makes the process fault on its memory map. Open checks what it
// can first (both meta pages' checksums, the file's length against the
// pages the meta page says it has), and every transaction runs with the
// panic recovered and memory faults turned into panics
// (debug.SetPanicOnFault), so that a damaged file gives ledger.ErrCorrupt
// naming the problem instead of ending the process. Check reads every
// bucket that way before it runs bbolt's own consistency check.
//
// # Layout
//
// Records are JSON except where noted; those a job adds for good (the
// journal entries, allocations and their history) are packed: zstd with a
// dictionary of ingot's records (internal/packing), which takes them to
// about a quarter. A finished lien and a charge are kept as a reference
// to the journal entry that carries them whole (0xE1, then the entry's
// number: 9 bytes), rather than as a second copy. Values written before
// schema 10 (JSON) and 11 (packed liens and charges) are stored as they
// were and read as they are.
// Integer keys (journal sequence numbers, ids) are 8-byte big-endian so
// that bbolt's byte order is their numeric order; times in keys are Unix
// nanoseconds, big-endian, as unsigned integers (every time a bank stores
// is after 1970).
//
//	meta                   "schema" -> version (8 bytes), "settings" -> ledger.Settings,
//	                       "journal_head" -> seq ‖ time ‖ SHA-256 of the newest entry
//	nodes                  name -> ledger.Node
//	users                  name -> ledger.User
//	machines               name -> ledger.Machine
//	allocations            id -> ledger.Allocation in its binary layout (ledger.AppendAllocation; before schema 12 JSON, packed;
//	                       its bucket sequence numbers new ones)
//	allocations_by_account account NUL id -> (empty)
//	allocations_by_end     account NUL end ‖ id -> (empty): end in Unix ns, 2^64-1 for none (LiveAllocations;
//	                       since schema 13); an allocation that starts after it was made is listed here only once a
//	                       change of its account finds it started (ActiveAllocations), or in allocations_used_up
//	                       if it is used up then
//	allocations_upcoming   account NUL start ‖ id -> (empty): start in Unix ns, for an allocation that starts after it
//	                       was made, until a change of its account finds it started (ActiveAllocations, NextStart,
//	                       UpcomingAllocations; since schema 17)
//	allocations_used_up    account NUL end ‖ id -> (empty), as allocations_by_end, for a started allocation while it is
//	                       used up (ledger.Allocation.UsedUp), which is then not in allocations_by_end: LiveAllocations
//	                       reads both, ActiveAllocations the other alone (UsedUpAllocations; since schema 18)
//	balance_history        id ‖ seq -> ledger.Allocation after entry seq, as in allocations
//	journal                seq -> SHA-256 ‖ time (Unix ns) ‖ the entry's bytes (ledger.StoredEntry), packed;
//	                       before schema 10, SHA-256 ‖ the bytes
//	requests               client NUL request id -> content hash ‖ seq ‖ time ‖ the answer's JSON
//	liens                  id -> ledger.Lien while it is active, then a reference to the entry that finished it
//	liens_by_job           machine NUL job id -> newest lien id
//	liens_active           account NUL expiry ‖ id -> (empty), while the lien is active
//	charges                id -> a reference to the entry that made it, or last refunded it
//	charges_by_job         machine NUL job id NUL id -> (empty)
//	records                kind NUL key -> the record's value (the ledger's running sums, audit checkpoint and archive boundary among them,
//	                       and, since schema 15, the digest of each journaled record: ledger.RecordDigest); since schema 16,
//	                       0xE2 for a journaled record larger than 2 KiB, kept in records_large
//	records_large          kind NUL key -> the value of a journaled record larger than 2 KiB (since schema 16), so that no
//	                       record that changes with every change of an account shares its pages
//	journal_by_node        term NUL seq -> (empty), for each node an entry concerns, and (since schema 14) its job
//	                       ("job " ‖ job id) and, for the kinds of a few entries a day, its kind ("kind " ‖ kind):
//	                       ledger.IndexTerms
//
// # Upgrades
//
// A file of an earlier schema, from 2 on, is upgraded in place when it is
// opened read-write (upgrade.go): first copied byte for byte beside itself,
// as PATH.schemaN.bak (.1, .2... if that name is taken), the copy and its
// directory synced, then changed in one transaction, so that a failure
// leaves the file as it was. Options.OnUpgrade is told of it. Opened
// read-only, such a file is refused until it has been upgraded. Schema 1
// is refused with ErrOldSchema, a newer schema with ErrNewerSchema. A file
// of schema 6 or 7 (made by the engine before this one, which kept a
// write-ahead log beside the file) left with log files by a crash is
// refused with ErrLogLeft: the ingot that made it must fold the log into
// the file first. Each refusal names the file and what to run.
package boltstore
