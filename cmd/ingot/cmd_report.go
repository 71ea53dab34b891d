package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/internal/warning"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/peer"
)

func reportCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:  "usage",
			Usage: "what jobs were charged (and refunded) by project, user and machine, per day, week or month, over a period: a usage report like Slurm's sreport; of the charges you may read",
			Flags: append(chargeFilterFlags(),
				&cli.StringFlag{Name: "by", Value: "project", Usage: "group by `KEYS`, comma-separated: project, user, machine (\"\" for one line)"},
				&cli.StringFlag{Name: "period", Usage: "one line per `PERIOD` too: day, week (from Monday) or month, in the local time zone"},
				csvFlag()),
			Action: usage,
		},
		{
			Name:      "balance",
			Usage:     "show balances (Gold's columns) of accounts, now or at a past time; an account named with projects also shows each node's HFS share now",
			ArgsUsage: "[NODE...]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "at", Usage: "as of `TIME` (now-2h, 2026-11-01, \"2026-11-01 14:30\", RFC 3339); only Gold's line: HFS shares are known only now"},
				&cli.BoolFlag{Name: "allocations", Usage: "list the allocations behind each balance: those active (of those used up, the " + strconv.Itoa(ledger.UsedUpListed) + " that end first and those liens hold) and the next " + strconv.Itoa(ledger.UpcomingListed) + " to start"},
				&cli.BoolFlag{Name: "all-allocations", Usage: "--allocations with every allocation yet to start or used up"},
				&cli.BoolFlag{Name: "upcoming", Usage: "the periods of the allocation schedules that start within a year (allocation schedule): of the nodes' accounts, else of every account you read"},
				&cli.BoolFlag{Name: "forecast", Usage: "the burn rate over the last 7 and 30 days (charges less their refunds) and when the available credits run out at it, beside the allocations' end; of the nodes named, else of every node you read"},
			},
			Action: balance,
		},
		{
			Name:      "statement",
			Usage:     "an account's beginning balance, credits, debits and ending balance over a period",
			ArgsUsage: "ACCOUNT",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "start", Usage: "period start `TIME` (default: the bank's first entry)"},
				&cli.StringFlag{Name: "end", Usage: "period end `TIME`, exclusive (default now)"},
				&cli.BoolFlag{Name: "summarize", Aliases: []string{"s"}, Usage: "one line per kind of credit or debit instead of one per entry"},
				csvFlag(),
			},
			Action: statement,
		},
		{
			Name:  "journal",
			Usage: "list journal entries",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "node", Usage: "entries of `NODE` and its subtree"},
				&cli.StringSliceFlag{Name: "kind", Usage: "entries of `KIND` (repeatable): " + kindList()},
				&cli.StringFlag{Name: "job", Usage: "entries of the liens, charges and refunds of job `JOBID` (as Gold's glstxn -J)"},
				&cli.StringFlag{Name: "machine", Usage: "with --job, of the job on `MACHINE` only (default: on any machine)"},
				&cli.StringFlag{Name: "since", Usage: "entries at or after `TIME`"},
				&cli.StringFlag{Name: "until", Usage: "entries before `TIME`"},
				&cli.IntFlag{Name: "last", Aliases: []string{"limit"}, Usage: "only the newest `N` entries (with --node, read from the node's index: as fast in year ten as in year one)"},
			},
			Action: journal,
		},
	}
}

func kindList() string {
	names := make([]string, len(ledger.Kinds))
	for i, k := range ledger.Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

func balance(c *cli.Context) error {
	at, err := parseTimeFlag(c, "at")
	if err != nil {
		return err
	}
	all := c.Bool("all-allocations")
	listing := all || c.Bool("allocations")
	if c.Bool("upcoming") {
		if c.IsSet("at") || listing || c.Bool("forecast") {
			return usageError{"--upcoming is of the schedules' periods to come: not with --at, --allocations or --forecast"}
		}
		return balanceUpcoming(c)
	}
	if c.Bool("forecast") {
		if c.IsSet("at") || listing {
			return usageError{"--forecast is of now and of balances only: not with --at or --allocations"}
		}
		return balanceForecast(c)
	}
	return withBank(c, func(b bank) error {
		balances, balanceAt := b.Balances, b.BalanceAt
		if all {
			balances, balanceAt = b.BalancesWithUpcoming, b.BalanceWithUpcoming
		}
		var nbs []ledger.NodeBalance
		if c.NArg() == 0 {
			if nbs, err = balances(c.Context, at); err != nil {
				return err
			}
		}
		for _, name := range c.Args().Slice() {
			nb, err := balanceAt(c.Context, name, at)
			if err != nil {
				return err
			}
			nbs = append(nbs, nb)
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		if listing {
			t := table{headers: []string{"Node", "Allocation", "Active", "Start", "End", "Machine", "Deposited", "Amount", "CreditLimit", "Description"}, data: orEmpty(nbs)}
			for _, nb := range nbs {
				for _, a := range nb.Allocations {
					t.add(nb.Node, strconv.FormatUint(a.ID, 10), yesNo(a.Active), localTime(a.Start), endTime(a.End), orAny(a.Machine),
						amount(a.Deposited, p), amount(a.Amount, p), amount(a.CreditLimit, p), a.Description)
				}
			}
			if err := show(c, t); err != nil {
				return err
			}
			return noteLeftOut(c, nbs)
		}
		var shares []ledger.AccountShares
		if !c.IsSet("at") {
			if shares, err = projectShares(c.Context, b, c.Args().Slice()); err != nil {
				return err
			}
		}
		// A project's Available is what a lien on it would get; where its
		// HFS share makes that less than its account has, the account's
		// figure is shown beside it.
		headers := []string{"Node", "Amount", "Reserved", "Balance", "CreditLimit", "Available"}
		split := slices.ContainsFunc(nbs, func(nb ledger.NodeBalance) bool { return nb.AccountAvailable != nil })
		if split {
			headers = append(headers, "AccountAvailable")
		}
		var warnings []warning.Warning
		if !c.IsSet("at") {
			for _, nb := range nbs {
				warnings = append(warnings, warning.Of(nb, cmp.Or(nb.At, time.Now()), p)...)
			}
		}
		t := table{headers: headers, data: withShares(nbs, shares, warnings)}
		for _, nb := range nbs {
			row := []string{nb.Node, amount(nb.Amount, p), amount(nb.Reserved, p), amount(nb.Balance.Balance, p), amount(nb.CreditLimit, p), amount(nb.Available, p)}
			if split {
				account := ""
				if nb.AccountAvailable != nil {
					account = amount(*nb.AccountAvailable, p)
				}
				row = append(row, account)
			}
			t.add(row...)
		}
		if err := show(c, t); err != nil {
			return err
		}
		if err := writeBalanceShares(c, shares, p); err != nil {
			return err
		}
		return writeWarnings(c, warnings)
	})
}

// noteLeftOut says on standard error (not in --json, whose balances say
// upcoming_left_out and used_up_left_out) which accounts have more
// allocations to start, or used up, than the table lists.
func noteLeftOut(c *cli.Context, nbs []ledger.NodeBalance) error {
	if f, err := outputFormat(c); err != nil || f == formatJSON {
		return err
	}
	for _, nb := range nbs {
		if nb.UpcomingLeftOut {
			fmt.Fprintf(c.App.ErrWriter, "%s: more allocations start later than the %d listed: --all-allocations lists them\n", nb.Node, ledger.UpcomingListed)
		}
		if nb.UsedUpLeftOut {
			fmt.Fprintf(c.App.ErrWriter, "%s: more allocations are used up than the %d listed: --all-allocations lists them\n", nb.Node, ledger.UsedUpListed)
		}
	}
	return nil
}

// balanceForecast shows the forecast of the nodes named, or of every node
// read: one line per node with each window's rate and run-out, then on
// standard error the runway warnings (package warning). Plain balance
// warns only of what the balance itself says: one request a command.
func balanceForecast(c *cli.Context) error {
	var nodes []string
	if c.NArg() > 0 {
		nodes = c.Args().Slice()
	}
	return withBank(c, func(b bank) error {
		fs, err := b.Forecast(c.Context, nodes)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Node", "Available", "PerDay7", "RunsOut7", "PerDay30", "RunsOut30", "AllocationsEnd", "DaysBeforeEnd30"}, data: orEmpty(fs)}
		for _, f := range fs {
			week, month := f.Rate(forecast.ShortWindow), f.Rate(forecast.LongWindow)
			end, before := "never", "-"
			if f.AllocationsEnd != nil {
				end = localTime(*f.AllocationsEnd)
			}
			if month.DaysBeforeEnd != nil {
				before = strconv.FormatInt(*month.DaysBeforeEnd, 10)
			}
			t.add(f.Node, amount(f.Available, p), week.PerDay.StringFixed(p+2), runsOut(week), month.PerDay.StringFixed(p+2), runsOut(month), end, before)
		}
		if err := show(c, t); err != nil {
			return err
		}
		var warnings []warning.Warning
		for _, f := range fs {
			warnings = append(warnings, warning.OfForecast(f)...)
		}
		return writeWarnings(c, warnings)
	})
}

// runsOut shows a rate's run-out time, "-" without one (no use).
func runsOut(r forecast.Rate) string {
	if r.RunsOut == nil {
		return "-"
	}
	return localTime(*r.RunsOut)
}

// balanceWithShares is one element of `balance --json`: the node's balance
// as before, for an account named with projects its HFS split now, and
// what the balance warns of now (package warning; not with --at).
type balanceWithShares struct {
	ledger.NodeBalance
	Shares   *ledger.AccountShares `json:"shares,omitempty"`
	Warnings []warning.Warning     `json:"warnings,omitempty"`
}

// projectShares is the HFS split of each account named that has projects.
func projectShares(ctx context.Context, b bank, names []string) ([]ledger.AccountShares, error) {
	var out []ledger.AccountShares
	for _, name := range names {
		if ledger.ParentOf(name) != "" {
			continue
		}
		s, err := b.Shares(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("HFS shares of %s: %w", name, err)
		}
		if len(s.Nodes) > 1 {
			out = append(out, s)
		}
	}
	return out, nil
}

func withShares(nbs []ledger.NodeBalance, shares []ledger.AccountShares, warnings []warning.Warning) []balanceWithShares {
	out := make([]balanceWithShares, len(nbs))
	for i, nb := range nbs {
		out[i].NodeBalance = nb
		for _, w := range warnings {
			if w.Node == nb.Node {
				out[i].Warnings = append(out[i].Warnings, w)
			}
		}
		for j := range shares {
			if shares[j].Account == nb.Node {
				out[i].Shares = &shares[j]
			}
		}
	}
	return out
}

// writeBalanceShares prints each account's split after the balances
// (--json carries it in the balances).
func writeBalanceShares(c *cli.Context, shares []ledger.AccountShares, p int32) error {
	f, err := outputFormat(c)
	if err != nil || f == formatJSON {
		return err
	}
	for _, s := range shares {
		if f == formatTable {
			fmt.Fprintln(c.App.Writer)
		}
		if err := writeShares(c, f, s, p, false); err != nil {
			return err
		}
	}
	return nil
}

// writeWarnings prints what the balances warn of on standard error, after
// the table, so that the table stays what a script reads (--json carries
// them in the balances).
func writeWarnings(c *cli.Context, warnings []warning.Warning) error {
	if f, err := outputFormat(c); err != nil || f == formatJSON {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(c.App.ErrWriter, "warning: %s: %s\n", w.Node, w.Message)
	}
	return nil
}

func statement(c *cli.Context) error {
	a, err := args(c, "ACCOUNT")
	if err != nil {
		return err
	}
	from, err := parseTimeFlag(c, "start")
	if err != nil {
		return err
	}
	to, err := parseTimeFlag(c, "end")
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		if to.IsZero() || from.IsZero() {
			settings, err := b.settings() // the bank's clock, and when it was created
			if err != nil {
				return err
			}
			if to.IsZero() {
				to = settings.Now.Add(time.Microsecond) // include what happened just now
			}
			if from.IsZero() {
				from = settings.Created
			}
		}
		st, err := b.Statement(c.Context, a[0], from, to, c.Bool("summarize"))
		if err != nil {
			return err
		}
		f, err := outputFormat(c)
		if err != nil {
			return err
		}
		if f == formatJSON {
			return writeJSON(c.App.Writer, st)
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		if err := report.WriteStatement(c.App.Writer, f.text(), st.Statement, p, c.Bool("summarize")); err != nil || len(st.SpentAtPeers) == 0 || f != formatTable {
			return err
		}
		// What peers reported spending of the grants into the account
		// there, in the report periods that begin in the period.
		fmt.Fprintf(c.App.Writer, "\nSpent at peers (their reports of the allocations this bank granted into %s there)\n", a[0])
		t := table{headers: []string{"Peer", "Reports", "Charges", "Charged", "Refunded", "Net"}}
		for _, s := range st.SpentAtPeers {
			t.add(s.Peer, strconv.Itoa(s.Reports), strconv.Itoa(s.Charges), amount(s.Charged, p), amount(s.Refunded, p), amount(s.Net, p))
		}
		return show(c, t)
	})
}

func journal(c *cli.Context) error {
	var f ledger.JournalFilter
	var err error
	if f.From, err = parseTimeFlag(c, "since"); err != nil {
		return err
	}
	if f.To, err = parseTimeFlag(c, "until"); err != nil {
		return err
	}
	for _, k := range c.StringSlice("kind") {
		kind, err := ledger.ParseKind(k)
		if err != nil {
			return err
		}
		f.Kinds = append(f.Kinds, kind)
	}
	f.Node, f.Limit, f.Job, f.Machine = c.String("node"), c.Int("last"), c.String("job"), c.String("machine")
	if f.Machine != "" && f.Job == "" {
		return usageError{"--machine goes with --job"}
	}
	if f.Limit < 0 {
		return usageError{"--limit must not be negative"}
	}
	return withBank(c, func(b bank) error {
		entries, err := b.Journal(c.Context, f)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Entry", "Time", "Kind", "Subject", "Ref", "Changes", "Actor", "Request", "Description"}, data: orEmpty(entries)}
		for _, e := range entries {
			var changes []string
			for _, d := range e.Deltas {
				sign := ""
				if d.Amount.IsPositive() {
					sign = "+"
				}
				changes = append(changes, fmt.Sprintf("%s#%d%s%s", d.Account, d.Allocation, sign, amount(d.Amount, p)))
			}
			t.add(strconv.FormatUint(e.Seq, 10), localTime(e.Time), string(e.Kind), subject(e), e.Ref, strings.Join(changes, " "), e.Actor, e.RequestID, e.Description)
		}
		return show(c, t)
	})
}

// subject names what an entry is about.
func subject(e ledger.Entry) string {
	switch {
	case e.Node != "":
		return e.Node
	case e.UserState != nil:
		return "user " + e.UserState.Name
	case e.Machine != nil:
		return "machine " + e.Machine.Name
	}
	return "bank"
}

func usage(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	f, err := chargeFilter(c)
	if err != nil {
		return err
	}
	var by []string
	if v := c.String("by"); v != "" {
		by = strings.Split(v, ",")
	}
	return withBank(c, func(b bank) error {
		charges, err := b.FindCharges(c.Context, f)
		if err != nil {
			return err
		}
		rows, err := lien.Usage(charges, by, c.String("period"), time.Local)
		if err != nil {
			return err
		}
		// Then what peers reported spending of this bank's grants.
		reports, err := b.PeerUsage(c.Context, f)
		if err != nil {
			return err
		}
		rows = append(rows, peer.UsageRows(reports, f, by, c.String("period"), time.Local)...)
		p, err := b.precision()
		if err != nil {
			return err
		}
		ut := report.UsageTable(rows, by, c.String("period") != "", p)
		return show(c, table{headers: ut.Headers, rows: ut.Rows, data: orEmpty(rows)})
	})
}
