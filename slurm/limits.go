package slurm

import (
	"context"
	"fmt"
	"maps"
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

// Limits mirrors the bank into Slurm's own association limits, so that
// Slurm holds each account to its credits by itself, bank up or down
// (AccountingStorageEnforce with limits, and safe; docs/slurm.md, "Slurm's
// own limits"):
//   - each account the bank knows gets GrpTRESMins=billing=(the minutes
//     Slurm counted + what the bank has left, in billing-minutes);
//   - one with nothing available GrpSubmitJobs=0, lifted (-1) when credits
//     return; an account whose GrpSubmit the site set to another number is
//     left as it is;
//   - one the bank does not know (or cannot tell from another)
//     GrpSubmitJobs=0, unless free lists it (root never: it is the parent
//     of every account), since it would run free with the hooks failing
//     open.
func (s *Site) Limits(ctx context.Context, free []string, dry bool) error {
	out, err := s.Run(ctx, "sacctmgr", "-P", "show", "assoc", "cluster="+s.Cluster)
	if err != nil {
		return err
	}
	limits, err := ParseSubmitLimits(out)
	if err != nil {
		return err
	}
	nodes, err := s.Bank.Nodes(ctx, "")
	if err != nil {
		return err
	}
	names := nodeNames(nodes)
	var billing Billing
	var usage map[string]AssocBilling
	rates, berr := s.Bank.Rates(ctx)
	if berr == nil {
		billing, berr = BillingOf(rates)
	}
	if berr == nil {
		out, err := s.Run(ctx, "scontrol", "-o", "show", "assoc_mgr", "flags=assoc")
		if err != nil {
			return err
		}
		if usage, err = ParseAssocBilling(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(s.Log, "ingot slurm sync: GrpTRESMins not mirrored: %v\n", berr)
	}
	for _, account := range slices.Sorted(maps.Keys(limits)) {
		node, nerr := NodeFor(account, names)
		if nerr == nil && berr == nil && account != "root" {
			available, err := s.Bank.Available(ctx, node)
			if err != nil {
				return err
			}
			used := usage[account].Used
			want := strconv.FormatInt(used+billing.Minutes(available), 10)
			if usage[account].Limit != want {
				why := fmt.Sprintf("%d used, %s: %s available at %s a billing-minute", used, node, available, billing.PerMinute)
				if err := s.setLimit(ctx, account, "GrpTRESMins=billing="+want, "at most "+want+" billing-minutes in all", why, dry); err != nil {
					return err
				}
			}
		}
		if limits[account] != "" && limits[account] != "0" {
			continue // a limit of the site's own
		}
		if nerr != nil {
			if account == "root" || slices.Contains(free, account) || limits[account] == "0" {
				continue
			}
			if err := s.setLimit(ctx, account, "GrpSubmitJobs=0", "no more jobs", BankWords(nerr.Error())+"; --free-accounts lets it run", dry); err != nil {
				return err
			}
			continue
		}
		available, err := s.Bank.Available(ctx, node)
		if err != nil {
			return err
		}
		var set, what string
		switch exhausted := !available.IsPositive(); {
		case exhausted && limits[account] == "":
			set, what = "GrpSubmitJobs=0", "no more jobs"
		case !exhausted && limits[account] == "0":
			set, what = "GrpSubmitJobs=-1", "jobs again"
		default:
			continue
		}
		if err := s.setLimit(ctx, account, set, what, fmt.Sprintf("%s: %s available", node, available), dry); err != nil {
			return err
		}
	}
	return nil
}

// setLimit sets a Slurm account's limit (sacctmgr), and says so.
func (s *Site) setLimit(ctx context.Context, account, set, what, why string, dry bool) error {
	if dry {
		fmt.Fprintf(s.Out, "would set %s: Slurm account %s takes %s (%s)\n", set, account, what, why)
		return nil
	}
	if _, err := s.Run(ctx, "sacctmgr", "-i", "modify", "account", "where", "name="+account, "cluster="+s.Cluster, "set", set); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "set %s: Slurm account %s takes %s (%s)\n", set, account, what, why)
	return nil
}
