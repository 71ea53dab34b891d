// Package schedule makes an account's allocations in regular periods: a
// schedule says the account, the amount of each period, its length (a
// month, a quarter or a year, from a start), how many periods (or until
// when), and what of a period's credits left at its end moves into the
// next (the carry-over rule).
//
// # Exactly once
//
// Run makes every period whose start has come and that is not yet made,
// in order, each in one change of the bank: the period's allocation
// (start and end the period's; journaled as a deposit whose Ref is the
// schedule), the carry-over from the period before (journaled as a
// transfer within the account, so statements show it as a debit of the
// old allocation and a credit of the new), and the schedule's count of
// periods made (a record, journaled). The change reads that count first
// and does nothing if another already made the period, and all of it
// commits or none: a server that was down at a boundary makes the periods
// it missed when it runs again, and two servers on one PostgreSQL bank,
// whose writers are serialised, make each period once. Each change also
// carries the request id schedule/ID/PERIOD, so a retried one is answered
// from the first.
//
// # Carry-over
//
// What is left of a period is its allocation's remaining amount when the
// next period is made, less what the liens of jobs still running hold on
// it (theirs to be charged; nothing if that leaves nothing). The rule moves none of it,
// all of it, or PERCENT of it (rounded down to the bank's precision), at
// most CAP when a cap is given. The last period's leftover stays where it
// is.
//
// # Storage
//
// Schedules are records of kind "schedule" (ledger.Record), kept and
// journaled by both engines like rate tables and reservations: no new
// table or bucket, so no new schema version.
package schedule
