// Package lien is the scheduler's side of the bank: quotes, liens placed
// before a job starts, charges when it ends (or every flush interval for a
// long job), refunds, fallback accounts and chargeable reservations.
//
// It prices with package charge and keeps its books through package ledger:
// every operation is one ledger.Mutate, so it is atomic, journaled and
// idempotent by request id. Its configuration (the rate table, charge
// policies, fallbacks, the lien grace period), guaranteed quotes and
// reservations are ledger records, journaled and audited like the rest.
//
// # Liens
//
// A lien is keyed by machine and job id. Placing it again for a job that
// already has an active lien returns that lien (the scheduler may retry);
// Replace re-prices it instead. Its amount is the quote for the requested
// resources over the wallclock limit; it expires at start + limit + grace.
// A lien that cannot be covered goes to the fallback (the project's nearest
// ancestor's, else the machine's, else the global one; "+suffix" appends to
// the project name) and the answer names the project actually used.
//
// # Charges
//
// A charge prices the usage under the charge policy the lien was placed
// with (or the one in force, without a lien). It debits the allocations the
// lien holds first, then the others in debit order, and never fails for lack
// of funds: what cannot be covered overdraws the first allocation and is
// recorded. An incremental charge shrinks the lien; a final one settles it
// and releases the rest. A job can be charged finally once.
package lien
