package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// chargeCommands: `ingot charge JOBID` charges a job, `ingot charge list
// JOBID` lists its charges, `ingot refund` returns credits. charge has both
// an action and a subcommand, so it carries the common flags itself
// (addCommonFlags gives them to leaves only). A job named "list" or "help"
// cannot be charged from here; Slurm's job ids are numbers.
func chargeCommands() []*cli.Command {
	flags := append(resourceFlags(),
		machineFlag(),
		&cli.StringFlag{Name: "user", Usage: "the `USER` who ran the job (required when the job has no active lien)"},
		&cli.StringFlag{Name: "project", Usage: "the `PROJECT` to charge when the job has no lien (default: the user's default project)"},
		&cli.StringFlag{Name: "wallclock-used", Usage: "wallclock the job used (required): " + durationForms},
		&cli.StringFlag{Name: "wallclock-limit", Usage: "wallclock the job asked for (DEBITREQUESTEDWC needs it; a job that used it all is successful)"},
		&cli.Int64Flag{Name: "cpu-seconds", Usage: "CPU seconds consumed, all processors together (default: procs × wallclock used, fully busy)"},
		&cli.StringFlag{Name: "start", Usage: "when the job started, which time-of-day rates depend on (default: now minus wallclock used)"},
		&cli.StringFlag{Name: "state", Value: "completed", Usage: "how the job ended: completed, failed, timeout, out_of_memory, requeued (a run of a job that runs again), cancelled, node_fail, preempted, boot_fail, deadline"},
		&cli.BoolFlag{Name: "incremental", Usage: "charge a running job for what it used since its last charge; its lien shrinks and stays"},
		&cli.StringFlag{Name: "reservation", Usage: "the chargeable reservation `NAME` the job ran in (its time there is not charged as idle)"},
		&cli.Uint64Flag{Name: "quote", Usage: "charge a job without a lien at guaranteed quote `ID`'s prices (uses it once, as Gold's gcharge -q)"},
	)
	return []*cli.Command{
		{
			Name:      "charge",
			Usage:     "charge a job for what it used, against its lien; prints the itemised charge",
			ArgsUsage: "JOBID",
			Flags:     flags,
			Action:    chargeJob,
			Subcommands: []*cli.Command{
				{Name: "list", Usage: "list a job's charges, or without JOBID the charges of a project's subtree, a user, a machine, a period", ArgsUsage: "[JOBID]",
					Flags: append(chargeFilterFlags(), csvFlag()), Action: chargeList},
			},
		},
		{
			Name: "refund",
			Usage: "return credits of a charge, or with --job of a job's charges from the newest back (all that is left without AMOUNT), " +
				"to the allocations they took them from",
			ArgsUsage: "CHARGE_ID [AMOUNT] | --job JOBID [AMOUNT]",
			Flags: []cli.Flag{descriptionFlag("the refund (the journal and statements show it)"),
				&cli.StringFlag{Name: "job", Usage: "refund the charges of job `JOBID` (as Gold's grefund -J) instead of one charge"}, machineFlag()},
			Action: refund,
		},
	}
}

// jobUsage reads what a job used from the charge flags.
func jobUsage(c *cli.Context) (charge.Usage, error) {
	res, err := jobResources(c)
	if err != nil {
		return charge.Usage{}, err
	}
	used, err := secondsFlag(c, "wallclock-used", true)
	if err != nil {
		return charge.Usage{}, err
	}
	limit, err := secondsFlag(c, "wallclock-limit", false)
	if err != nil {
		return charge.Usage{}, err
	}
	// A job that reports no CPU time is taken as fully busy: under the CPU
	// policies, 0 would make it free.
	cpu := res.Processors * used
	if c.IsSet("cpu-seconds") {
		if cpu, err = countFlag(c, "cpu-seconds", 0, charge.MaxCPUSeconds); err != nil {
			return charge.Usage{}, err
		}
	}
	state, err := charge.ParseExitState(c.String("state"))
	if err != nil {
		return charge.Usage{}, usageError{fmt.Sprintf("--state: %v", err)}
	}
	start, err := parseTimeFlag(c, "start")
	if err != nil {
		return charge.Usage{}, err
	}
	if start.IsZero() {
		start = time.Now().UTC().Truncate(time.Second).Add(-time.Duration(used) * time.Second)
	}
	return charge.Usage{Resources: res, WallclockSeconds: used, WallclockLimitSeconds: limit, CPUSeconds: cpu, Start: start, State: state}, nil
}

func chargeJob(c *cli.Context) error {
	usage, err := jobUsage(c)
	if err != nil {
		return err
	}
	return withJob(c, func(b bank, job lien.Job) error {
		r, err := b.Charge(c.Context, request(c), lien.ChargeSpec{Job: job, User: c.String("user"), Project: c.String("project"), Usage: usage,
			Incremental: c.Bool("incremental"), Reservation: c.String("reservation"), Quote: c.Uint64("quote")})
		if err != nil {
			return err
		}
		return showChargeResult(c, b, r)
	})
}

// showChargeResult shows a charge, where its credits came from, what
// happened to the lien, and the itemised price.
func showChargeResult(c *cli.Context, b bank, r lien.ChargeResult) error {
	p, err := b.precision()
	if err != nil {
		return err
	}
	t := table{headers: []string{"Field", "Value"}, data: r}
	chargeRows(&t, r.Charge, p)
	if r.Lien != nil {
		t.add("Lien", fmt.Sprintf("%d, %s, %s still held", r.Lien.ID, r.Lien.State, amount(heldBy(*r.Lien), p)))
	}
	if r.Overran.IsPositive() {
		t.add("Overran the lien by", amount(r.Overran, p))
	}
	if r.Charge.Final && r.Lien != nil {
		t.add("Released", amount(r.Released, p))
	}
	if err := homeRows(&t, r.Home, &lien.ChargeResult{}); err != nil {
		return err
	}
	explained, err := lien.ExplanationOf(r.Charge)
	if err != nil {
		return err
	}
	return showExplained(c, t, charge.Amount{Credits: r.Charge.Amount, Explanation: explained})
}

// homeRows say where the lien or charge of a job homed at a peer bank was
// made (nothing when f is nil), and what the home bank held or charged,
// in its credits, with its id of the lien or charge; what is the home
// bank's answer decoded (a *ledger.Lien or a *lien.ChargeResult).
func homeRows(t *table, f *lien.Forwarded, answer any) error {
	if f == nil {
		return nil
	}
	t.add("Home bank", fmt.Sprintf("%s:%s (rate ratio %s), transaction %s %s", f.Peer, f.Project, f.RateRatio, f.Transaction, f.State))
	if len(f.Answer) == 0 {
		return nil
	}
	if err := json.Unmarshal(f.Answer, answer); err != nil {
		return fmt.Errorf("home bank %s's answer: %w", f.Peer, err)
	}
	switch home := answer.(type) {
	case *ledger.Lien:
		t.add("Held at the home bank", fmt.Sprintf("%s of %s's credits (its lien %d)", home.Amount, f.Peer, home.ID))
	case *lien.ChargeResult:
		t.add("Charged at the home bank", fmt.Sprintf("%s of %s's credits (its charge %d)", home.Charge.Amount, f.Peer, home.Charge.ID))
	}
	return nil
}

// showHomeRefund says where a refund of a job homed at a peer bank was
// made, and what the home bank refunded, in its credits.
func showHomeRefund(c *cli.Context, f *lien.Forwarded) error {
	what := "pending: sent when the bank answers"
	if len(f.Answer) > 0 {
		var home lien.JobRefund
		if err := json.Unmarshal(f.Answer, &home); err != nil {
			return fmt.Errorf("home bank %s's answer: %w", f.Peer, err)
		}
		what = fmt.Sprintf("%s of its credits refunded", home.Refunded)
	}
	_, err := fmt.Fprintf(c.App.Writer, "at home bank %s on %s, transaction %s: %s\n", f.Peer, f.Project, f.Transaction, what)
	return err
}

// heldBy is what a lien still holds: nothing once it is no longer active.
func heldBy(l ledger.Lien) decimal.Decimal {
	if l.State != ledger.LienActive {
		return decimal.Zero
	}
	return l.Amount
}

// chargeRows are a charge as Field/Value rows, with what it took from and
// gave back to each allocation.
func chargeRows(t *table, ch ledger.Charge, p int32) {
	t.add("Charge", strconv.FormatUint(ch.ID, 10))
	t.add("Job", ch.JobID)
	t.add("Machine", ch.Machine)
	t.add("Project", ch.Project)
	t.add("User", ch.User)
	t.add("Kind", chargeKind(ch))
	t.add("Amount", amount(ch.Amount, p))
	for _, d := range perAllocation(ch.Debits) {
		t.add(fmt.Sprintf("Debited from allocation %d", d.Allocation), amount(d.Amount, p))
	}
	t.add("Overdrawn", amount(ch.Overdrawn, p))
	if ch.Refunded.IsPositive() {
		t.add("Refunded", amount(ch.Refunded, p))
		for _, r := range perAllocation(ch.Refunds) {
			t.add(fmt.Sprintf("Refunded to allocation %d", r.Allocation), amount(r.Amount, p))
		}
	}
	t.add("Time", localTime(ch.Time))
}

// perAllocation sums amounts by allocation, in the order the allocations
// first appear: several refunds of one charge may go to the same allocation.
func perAllocation(holds []ledger.Hold) []ledger.Hold {
	var out []ledger.Hold
	at := map[uint64]int{}
	for _, h := range holds {
		if i, ok := at[h.Allocation]; ok {
			out[i].Amount = out[i].Amount.Add(h.Amount)
			continue
		}
		at[h.Allocation] = len(out)
		out = append(out, h)
	}
	return out
}

func chargeKind(ch ledger.Charge) string {
	if ch.Final {
		return "final"
	}
	return "incremental"
}

func chargeList(c *cli.Context) error {
	if c.NArg() == 1 {
		return withJob(c, func(b bank, job lien.Job) error {
			charges, err := b.Charges(c.Context, job)
			if err != nil {
				return err
			}
			return showCharges(c, b, charges)
		})
	}
	if c.NArg() > 1 {
		return usageError{fmt.Sprintf("charge list takes at most one JOBID (got %d arguments)", c.NArg())}
	}
	f, err := chargeFilter(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		charges, err := b.FindCharges(c.Context, f)
		if err != nil {
			return err
		}
		return showCharges(c, b, charges)
	})
}

func showCharges(c *cli.Context, b bank, charges []ledger.Charge) error {
	p, err := b.precision()
	if err != nil {
		return err
	}
	t := table{headers: []string{"Charge", "Job", "Machine", "Project", "User", "Kind", "Amount", "Refunded", "Overdrawn", "Time"}, data: orEmpty(charges)}
	for _, ch := range charges {
		t.add(strconv.FormatUint(ch.ID, 10), ch.JobID, ch.Machine, ch.Project, ch.User, chargeKind(ch), amount(ch.Amount, p), amount(ch.Refunded, p),
			amount(ch.Overdrawn, p), localTime(ch.Time))
	}
	return show(c, t)
}

// chargeFilterFlags pick charges, for charge list and usage.
func chargeFilterFlags() []cli.Flag {
	return []cli.Flag{
		machineFlag(),
		&cli.StringFlag{Name: "project", Usage: "the charges of `NODE` and its subtree (an account or a project)"},
		&cli.StringFlag{Name: "user", Usage: "the charges of jobs of `USER`"},
		&cli.StringFlag{Name: "since", Usage: "charges made at or after `TIME` (now-30d, 2026-11-01, RFC 3339)"},
		&cli.StringFlag{Name: "until", Usage: "charges made before `TIME` (default now)"},
	}
}

func chargeFilter(c *cli.Context) (lien.ChargeFilter, error) {
	f := lien.ChargeFilter{Node: c.String("project"), User: c.String("user"), Machine: c.String("machine")}
	var err error
	if f.Since, err = parseTimeFlag(c, "since"); err != nil {
		return f, err
	}
	f.Until, err = parseTimeFlag(c, "until")
	return f, err
}

func refund(c *cli.Context) error {
	if c.String("job") != "" {
		return refundJob(c)
	}
	if c.NArg() < 1 || c.NArg() > 2 {
		return usageError{fmt.Sprintf("refund takes CHARGE_ID [AMOUNT] or --job JOBID [AMOUNT] (got %d arguments)", c.NArg())}
	}
	id, err := strconv.ParseUint(c.Args().Get(0), 10, 64)
	if err != nil || id == 0 {
		return usageError{fmt.Sprintf("refund: CHARGE_ID %q is not a charge number", c.Args().Get(0))}
	}
	return withBank(c, func(b bank) error {
		spec := lien.RefundSpec{Charge: id, Description: c.String("description")}
		if c.NArg() == 2 {
			p, err := b.precision()
			if err != nil {
				return err
			}
			if spec.Amount, err = ledger.ParseAmount(c.Args().Get(1), p); err != nil {
				return err
			}
		}
		ch, err := b.Refund(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		t := table{headers: []string{"Field", "Value"}, data: ch}
		p, err := b.precision()
		if err != nil {
			return err
		}
		chargeRows(&t, ch, p)
		return show(c, t)
	})
}

// refundJob refunds a job's charges: AMOUNT of them, or all that is left.
func refundJob(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageError{fmt.Sprintf("refund --job JOBID takes at most an AMOUNT (got %d arguments)", c.NArg())}
	}
	return withBank(c, func(b bank) error {
		m, err := machineOf(c, b)
		if err != nil {
			return err
		}
		spec := lien.JobRefundSpec{Job: lien.Job{Machine: m, ID: c.String("job")}, Description: c.String("description")}
		if c.NArg() == 1 {
			p, err := b.precision()
			if err != nil {
				return err
			}
			if spec.Amount, err = ledger.ParseAmount(c.Args().Get(0), p); err != nil {
				return err
			}
		}
		r, err := b.RefundJob(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Charge", "Job", "Machine", "Project", "Kind", "Amount", "Refunded"}, data: r}
		for _, ch := range r.Charges {
			t.add(strconv.FormatUint(ch.ID, 10), ch.JobID, ch.Machine, ch.Project, chargeKind(ch), amount(ch.Amount, p), amount(ch.Refunded, p))
		}
		if f, _ := outputFormat(c); f != formatTable {
			return show(c, t)
		}
		// A homed job's refund refunded no charge of this bank's.
		if len(r.Charges) > 0 {
			if err := show(c, t); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(c.App.Writer, "refunded %s of job %s\n", amount(r.Refunded, p), spec.ID); err != nil || r.Home == nil {
			return err
		}
		return showHomeRefund(c, r.Home)
	})
}
