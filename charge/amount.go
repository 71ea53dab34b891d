package charge

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// Amount is a priced job: the credits, rounded half-even to the table's
// precision, and the explanation a reader can check them by.
type Amount struct {
	Credits     decimal.Decimal `json:"credits"`
	Explanation Explanation     `json:"explanation"`
}

// Explanation is Gold's formula filled in:
//
//	Exact = (TimeScaled + Usage) × Multiplier + Fees
//
// where TimeScaled, Usage and Fees are the sums, and Multiplier the
// product, of the Subtotals of their line items. Credits is Exact rounded
// half-even to Precision places; that is the only rounding.
type Explanation struct {
	Subject  string    `json:"subject"` // "charge" or "quote"
	Policy   Policy    `json:"policy"`
	State    ExitState `json:"state,omitzero"` // how the job ended (charges only)
	NoCharge string    `json:"no_charge,omitempty"`
	// Basis says how the policy counted the job: the Processors quantity,
	// the WallDuration and the ConsumptionRate.
	Basis      []string        `json:"basis,omitempty"`
	Items      []LineItem      `json:"items,omitempty"`
	TimeScaled decimal.Decimal `json:"time_scaled"` // (VBR + NBR) × ConsumptionRate × WallDuration
	Usage      decimal.Decimal `json:"usage"`       // VBU + NBU
	Multiplier decimal.Decimal `json:"multiplier"`  // VBM × NBM
	Fees       decimal.Decimal `json:"fees"`        // VBF + NBF
	Exact      decimal.Decimal `json:"exact"`       // before rounding
	Precision  int32           `json:"precision"`
}

// LineItem is one rate applied to one quantity. For a time-scaled rate (VBR,
// NBR) Subtotal = Quantity × Rate × Seconds × Multiplier, one item per
// stretch of WallDuration under the same time windows, where Multiplier is
// those windows' multipliers times the ConsumptionRate. For the other types
// Subtotal = Quantity × Rate (Seconds 0, Multiplier 1); for VBM and NBM that
// Subtotal is the factor the charge is multiplied by.
type LineItem struct {
	Type RateType `json:"type"`
	// What is the rate's name, and for a name-based rate the job's value
	// ("License=matlab"; "QualityOfService=normal (*)" when matched by the
	// wildcard).
	What       string          `json:"what"`
	Window     string          `json:"window,omitempty"` // the stretch of time and its windows, when the table has windows
	Quantity   decimal.Decimal `json:"quantity"`
	Rate       decimal.Decimal `json:"rate"`
	Seconds    int64           `json:"seconds,omitempty"`
	Multiplier decimal.Decimal `json:"multiplier"`
	Subtotal   decimal.Decimal `json:"subtotal"`
}

// String renders the explanation as text, one line per item, ending with
// the formula and its result.
func (a Amount) String() string {
	e := a.Explanation
	var b strings.Builder
	fmt.Fprintf(&b, "%s under %s", e.Subject, e.Policy)
	if e.State != 0 {
		fmt.Fprintf(&b, ", job %s", e.State)
	}
	b.WriteString("\n")
	if e.NoCharge != "" {
		fmt.Fprintf(&b, "no charge: %s\ncharge = %s\n", e.NoCharge, a.Credits.StringFixed(e.Precision))
		return b.String()
	}
	for _, line := range e.Basis {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	for _, s := range []struct {
		term    term
		heading string
		total   decimal.Decimal
	}{
		{timeScaledTerm, "time-scaled = (VBR + NBR) × ConsumptionRate × WallDuration", e.TimeScaled},
		{usageTerm, "usage = VBU + NBU", e.Usage},
		{multiplierTerm, "multiplier = VBM × NBM", e.Multiplier},
		{feeTerm, "fees = VBF + NBF", e.Fees},
	} {
		fmt.Fprintf(&b, "%s = %s\n", s.heading, s.total)
		for _, item := range e.Items {
			if rateTypes[item.Type].term == s.term {
				fmt.Fprintf(&b, "  %s\n", item)
			}
		}
	}
	fmt.Fprintf(&b, "%s = (%s + %s) × %s + %s = %s → %s (half-even to %d places)\n",
		e.Subject, e.TimeScaled, e.Usage, e.Multiplier, e.Fees, e.Exact, a.Credits.StringFixed(e.Precision), e.Precision)
	return b.String()
}

func (l LineItem) String() string {
	if rateTypes[l.Type].term != timeScaledTerm {
		return fmt.Sprintf("%s %s: %s × %s = %s", l.Type, l.What, l.Quantity, l.Rate, l.Subtotal)
	}
	s := fmt.Sprintf("%s %s: %s × %s × %d s × %s = %s", l.Type, l.What, l.Quantity, l.Rate, l.Seconds, l.Multiplier, l.Subtotal)
	if l.Window != "" {
		s += " [" + l.Window + "]"
	}
	return s
}
