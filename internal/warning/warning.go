package warning

import (
	"fmt"
	"time"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/ledger"
)

// Soon is how close an allocation's end is when it is warned of: a
// month, time enough to ask for the next allocation.
const Soon = 30 * 24 * time.Hour

// Kind is what a warning is about.
type Kind string

const (
	// Ending: an active allocation ends within Soon.
	Ending Kind = "ending"
	// Exhausted: a new lien on the node would get nothing, or an active
	// allocation has nothing left (its amount and credit limit are
	// taken by charges and liens).
	Exhausted Kind = "exhausted"
	// Runway: at a recent pace (package forecast) the credits available
	// run out before the active allocations end.
	Runway Kind = "runway"
)

// Warning is one thing to warn of on a node.
type Warning struct {
	Node string `json:"node"`
	Kind Kind   `json:"kind"`
	// Allocation is the allocation it is about; 0 for the node as a whole.
	Allocation uint64 `json:"allocation,omitempty"`
	// Ends is the allocation's end, for Ending.
	Ends    time.Time `json:"ends,omitzero"`
	Message string    `json:"message"`
}

// Of is what nb, a balance at now in a bank of precision decimal places,
// warns of: the node exhausted if a new lien would get nothing while an
// allocation is active (else each active allocation that has nothing
// left), and each active allocation that ends within Soon.
func Of(nb ledger.NodeBalance, now time.Time, precision int32) []Warning {
	var out []Warning
	var active []ledger.AllocationStatus
	for _, a := range nb.Allocations {
		if a.Active {
			active = append(active, a)
		}
	}
	if len(active) > 0 && !nb.Available.IsPositive() {
		out = append(out, Warning{Node: nb.Node, Kind: Exhausted,
			Message: fmt.Sprintf("%s is exhausted: a new job's lien would get nothing (available %s credits)", nb.Node, report.Amount(nb.Available, precision))})
	} else {
		for _, a := range active {
			if left := a.Amount.Add(a.CreditLimit).Sub(a.Reserved); !left.IsPositive() {
				out = append(out, Warning{Node: nb.Node, Kind: Exhausted, Allocation: a.ID,
					Message: fmt.Sprintf("allocation %d of %s is exhausted: %s credits left", a.ID, ledger.AccountOf(nb.Node), report.Amount(left, precision))})
			}
		}
	}
	for _, a := range active {
		if a.End.IsZero() || a.End.Sub(now) > Soon {
			continue
		}
		out = append(out, Warning{Node: nb.Node, Kind: Ending, Allocation: a.ID, Ends: a.End,
			Message: fmt.Sprintf("allocation %d of %s ends %s, on %s", a.ID, ledger.AccountOf(nb.Node), in(a.End.Sub(now)), report.LocalTime(a.End))})
	}
	return out
}

// OfForecast is what f, a node's forecast, warns of: that at the pace of
// one of its windows the node's credits run out before its allocations
// end (the window whose run-out comes first).
func OfForecast(f forecast.Forecast) []Warning {
	var first *forecast.Rate
	for i, r := range f.Rates {
		if r.RunsOut != nil && r.DaysBeforeEnd != nil && *r.DaysBeforeEnd > 0 && (first == nil || r.RunsOut.Before(*first.RunsOut)) {
			first = &f.Rates[i]
		}
	}
	if first == nil {
		return nil
	}
	return []Warning{{Node: f.Node, Kind: Runway, Ends: *f.AllocationsEnd,
		Message: fmt.Sprintf("at the pace of the last %d days, %s's credits run out on %s, %d days before its allocations end on %s",
			first.Days, f.Node, report.LocalTime(*first.RunsOut), *first.DaysBeforeEnd, report.LocalTime(*f.AllocationsEnd))}}
}

// in says how long until an end, in whole days (rounded down), or hours
// within the last day.
func in(d time.Duration) string {
	switch days := int(d / (24 * time.Hour)); {
	case days > 1:
		return fmt.Sprintf("in %d days", days)
	case days == 1:
		return "in 1 day"
	case d >= 2*time.Hour:
		return fmt.Sprintf("in %d hours", int(d/time.Hour))
	default:
		return "within the hour"
	}
}
