package slurm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// Billing is how the bank's rate table maps onto Slurm's billing TRES, so
// that Slurm can hold an account to what it has left by itself
// (GrpTRESMins=billing=N): one billing unit for one second is what one
// processor costs for a second, each TRES weighs its rate over the
// processors' rate (TRESBillingWeights), and N is what is left over the
// price of a billing-minute.
type Billing struct {
	// Weights is the partitions' TRESBillingWeights ("CPU=1,GRES/gpu=5").
	Weights string
	// PerMinute is what one billing-minute costs in credits.
	PerMinute decimal.Decimal
	// Approximate names the parts of the rate table that billing cannot
	// express (multipliers, fees, charges per job, named rates, time
	// windows): Slurm's count is then only close to the bank's.
	Approximate []string
}

// BillingOf derives the billing of rate table t; it needs a rate for
// Processors.
func BillingOf(t charge.RateTable) (Billing, error) {
	var cpu decimal.Decimal
	others := map[string]decimal.Decimal{}
	var approx []string
	for _, r := range t.Rates {
		switch {
		case r.Type == charge.VBR && r.Instance == "" && r.Name == "Processors":
			cpu = r.Rate
		case r.Type == charge.VBR && r.Instance == "" && (r.Name == "GPUs" || r.Name == "Memory"):
			others[r.Name] = r.Rate
		case r.Rate.IsZero() && r.Type != charge.VBM && r.Type != charge.NBM:
		default:
			what := fmt.Sprintf("%s %s", r.Type, r.Name)
			if r.Instance != "" {
				what += "=" + r.Instance
			}
			if !slices.Contains(approx, what) {
				approx = append(approx, what)
			}
		}
	}
	if !cpu.IsPositive() {
		return Billing{}, fmt.Errorf("slurm: the rate table has no rate for Processors: Slurm's billing cannot count credits")
	}
	if len(t.TimeOfDay) > 0 || len(t.DaysOfWeek) > 0 {
		approx = append(approx, "time-of-day and day-of-week multipliers")
	}
	weights := []string{"CPU=1"}
	if r, ok := others["GPUs"]; ok {
		weights = append(weights, "GRES/gpu="+r.Div(cpu).String())
	}
	if r, ok := others["Memory"]; ok {
		weights = append(weights, "Mem="+r.Div(cpu).String())
	}
	return Billing{Weights: strings.Join(weights, ","), PerMinute: cpu.Mul(decimal.NewFromInt(60)), Approximate: approx}, nil
}

// Minutes is available credits in whole billing-minutes (rounded down:
// Slurm never lets an account past what it can pay).
func (b Billing) Minutes(available decimal.Decimal) int64 {
	if !available.IsPositive() {
		return 0
	}
	return available.Div(b.PerMinute).Floor().IntPart()
}

// AssocBilling is an account's billing limit and usage as the controller
// holds them.
type AssocBilling struct {
	// Limit is GrpTRESMins' billing ("" when none is set).
	Limit string
	// Used is the association's billing-minutes used, as Slurm counts them
	// against the limit (decayed by PriorityDecayHalfLife, if any).
	Used int64
}

// ParseAssocBilling reads `scontrol -o show assoc_mgr flags=assoc`: for
// each account's own association (no user, no partition), its
// GrpTRESMins billing limit and usage ("billing=N(USED)", N "N" when
// unset).
func ParseAssocBilling(out string) (map[string]AssocBilling, error) {
	accounts := map[string]AssocBilling{}
	for _, line := range strings.Split(out, "\n") {
		f := fields(line)
		if f["Account"] == "" || f["UserName"] != "" || f["Partition"] != "" {
			continue
		}
		mins, ok := f["GrpTRESMins"]
		if !ok {
			continue
		}
		for _, item := range strings.Split(mins, ",") {
			name, rest, _ := strings.Cut(item, "=")
			if name != "billing" {
				continue
			}
			limit, used, ok := strings.Cut(strings.TrimSuffix(rest, ")"), "(")
			if !ok {
				return nil, fmt.Errorf("slurm: scontrol show assoc_mgr: account %s: GrpTRESMins %s is not billing=LIMIT(USED)", ledger.Excerpt(f["Account"]), ledger.Excerpt(mins))
			}
			n, err := strconv.ParseFloat(used, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("slurm: scontrol show assoc_mgr: account %s: usage %s is not a number", ledger.Excerpt(f["Account"]), ledger.Excerpt(used))
			}
			a := AssocBilling{Used: int64(n + 0.999999)} // a part of a minute used counts
			if limit != "N" {
				a.Limit = limit
			}
			accounts[f["Account"]] = a
		}
	}
	return accounts, nil
}

// fields are the KEY=VALUE words of a line of scontrol -o.
func fields(line string) map[string]string {
	f := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if _, seen := f[k]; !seen {
				f[k] = v
			}
		}
	}
	return f
}
