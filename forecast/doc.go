// Package forecast says, for an account or a project, how fast it spends
// its credits and when, at that pace, the credits it has now run out,
// beside the day its allocations end.
//
// # How to call it
//
//	fs, err := forecast.Of(ctx, l, []string{"chem", "chem.lab1"}) // l is a *ledger.Ledger
//	for _, f := range fs {
//		r := f.Rate(forecast.LongWindow) // the last 30 days
//		if r.RunsOut != nil { ... *r.RunsOut, r.DaysBeforeEnd ... }
//	}
//
// Through the server it is GET /v1/forecast (node=NAME for one node,
// else every node the client reads), a List of Forecast; the CLI shows it
// with `ingot balance --forecast`.
//
// # The rules
//
// The burn rate of a window (the last 7 and the last 30 days before now)
// is what the node's jobs were charged in it (charges at or after its start, up to now) (the node's and its
// subprojects'; an account's: all of its projects'), divided by the days
// of the window. Refunds are not use: a charge counts at the time it was
// made, less whatever of it has been refunded since, whenever the refund
// was made; a refund never lowers the use of a window its charge is not
// in, and a fully refunded charge counts nothing.
//
// At that rate the credits available now (ledger.NodeBalance.Available:
// for a project what a lien on it would get) last
// available × window ÷ charged: the run-out time is now plus that, to the
// second (rounded down), computed from the exact sums, not from the
// rounded rate shown. A window without use has no run-out time: nothing
// is guessed, nor a date more than 100 years away. A node with nothing available has run out now.
//
// The allocations' end is the latest end among the allocations active now
// (none if one of them never ends): the day the credits go whatever the
// pace. DaysBeforeEnd is how many whole days the run-out comes before it
// (negative: the credits outlast the allocations, which end first).
//
// Charges are read from the journal entries of the last 30 days (each
// account's, from its index), so a forecast costs the same in a bank's
// tenth year as in its first; the figures are the bank's at the time of
// the call.
package forecast
