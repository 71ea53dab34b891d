// Package charge prices jobs: the rate table, the charge policies, and
// quotes. It is pure: functions of their arguments, no storage, no clock,
// and it imports nothing else of ingot. The ledger stores rate tables,
// charges and guaranteed quotes; this package only computes and checks.
//
// # The formula
//
// A job is priced with Gold Allocation Manager's charge-rate formula, so a
// centre can move its rate table over:
//
//	charge = (((VBR + NBR) × ConsumptionRate × WallDuration) + VBU + NBU) × VBM × NBM + VBF + NBF
//
// A ChargeRate has Gold's Type, Name, Instance and Rate. Value-based types
// (VB*) multiply the rate by a job quantity: Processors, Nodes, GPUs,
// Memory (MB), Disk (MB), CPUTime (CPU seconds; not for VBR, being time
// already). Name-based types (NB*) match a job property, QualityOfService,
// Partition, NodeType or License, whose value equals the Instance, case
// aside; the rate is multiplied by the count held (licenses) or 1. R rates
// are per second of WallDuration, U rates are once, M rates multiply
// everything before the fees (an NBM counts once, whatever the count), F
// rates are added at the end. The default table is 1 credit per
// processor-second and nothing else.
//
// The Instance "*" (Wildcard) matches every value that no rate of the same
// type and name lists. If a table prices some values of a property and
// has no "*" rate for it, a job with another value is refused with
// ErrUnknownInstance: a new QOS nobody priced must not run at an
// accidental price. Add "QualityOfService=* → 1" to let unlisted QOS run
// at the plain price. A job that leaves a property empty matches nothing.
//
// # Time windows
//
// A table may multiply the time-scaled part by time-of-day windows
// ("20:00" to "06:00" × 0.5; End before Start wraps past midnight) and
// day-of-week windows (Saturday, Sunday × 0.8). Windows are read on the
// wall clock of the table's Location, an IANA zone (empty means UTC; the
// zone data is embedded so every host agrees); times in usage are
// instants, stored in UTC. Time-of-day windows may not overlap one
// another, nor day windows share a day, so a second is under at most one
// of each; under both, their multipliers multiply (a weekend night costs
// 0.5 × 0.8 = 0.4). The WallDuration is laid from the job's start on and
// priced piecewise: cut wherever the local clock crosses a window edge or
// midnight, or the zone's offset changes, each stretch multiplied by its
// windows. A second counts under the clock reading it shows: in a
// spring-forward gap no second reads 02:30; in a fall-back overlap the
// repeated hour is read, and priced, twice.
//
// # Policies
//
// A Policy (Moab's names; DebitSuccessfulWC by default) chooses the
// Processors quantity (dedicated, processor equivalents, or whole nodes'
// cores), the WallDuration (used or requested), the ConsumptionRate (1, or
// CPU seconds over dedicated processor-seconds), and whether a job
// removed early is charged at all. See Policy for each definition and
// docs/charge-policies.md for worked examples. ResolvePolicy applies the global,
// machine and project settings in that order of precedence.
//
// # Amounts and rounding
//
// Amounts are shopspring/decimal values, never floats. The arithmetic is
// exact: quotients (a processor equivalent of 64/3, a consumption rate of
// 1/3) are carried as fractions, and the only rounding is the last one,
// half to even (decimal's RoundBank rule) at the table's Precision, the
// bank's currency precision (2 places by default). The explanation shows a
// figure that does not terminate to 18 decimal places; it is for reading,
// the charge does not depend on it. Durations are whole seconds (int64).
//
// Every Amount carries its Explanation: the policy's basis, one LineItem
// per rate and stretch of time (quantity × rate × seconds × multiplier =
// subtotal), the four terms and the formula, so a reader can redo the
// arithmetic by hand; Amount.String renders it.
//
// Checking and compiling a table costs more than pricing a job under it:
// RateTable.Compile gives a CompiledTable to price many jobs with (the
// bank keeps one per rate-table record); Price and Quote compile the
// table each time.
//
// # Quotes
//
// Quote prices a Request as if the job ran to its wallclock limit with its
// processors busy throughout; this is also the lien amount. Guarantee
// freezes a copy of the whole table, the policy and the node shape with
// the quote, valid until a time for a number of jobs: a rate created or
// changed later does not apply to a job that used the quote.
//
// # Caveats
//
//   - "Successful" follows Moab: a job that exited non-zero (failed, or
//     out_of_memory) ran to its own end and is charged, and so is a run of a
//     job that was requeued (requeued: the job runs again); only a job removed
//     early (cancelled, node_fail, preempted, boot_fail, deadline) before
//     using its whole limit goes free under the SUCCESSFUL policies.
//   - Incremental charges are priced with the state Running and so are
//     charged under every policy; a job removed later keeps them. Under
//     DebitRequestedWC every call charges the whole limit, so such a job
//     should be charged once, at its end.
//   - ConsumptionRate scales every time-scaled rate, as in Gold, not only
//     Processors. Under a PE policy, other VBR rates (Memory) still apply
//     to their own quantity: a PE table usually prices Processors alone.
//   - A VBM whose quantity is 0 multiplies the charge by 0, as Gold does.
//   - The WallDuration is laid from Start: a suspended job (wallclock
//     shorter than end − start) is priced as if it ran without a pause.
//   - DebitSuccessfulNode is Moab's other name for DebitSuccessfulBlocked.
//   - Inputs beyond MaxCount, MaxMB or MaxSeconds (ten years), rates above
//     10^12 or finer than MaxRatePlaces, are refused as mistakes.
package charge
