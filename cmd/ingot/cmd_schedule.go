package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/schedule"
)

// scheduleCommand is `allocation schedule`: an account's allocations made
// every month, quarter or year by the bank itself (package schedule).
func scheduleCommand() *cli.Command {
	periods := []cli.Flag{
		&cli.IntFlag{Name: "count", Usage: "make `N` periods, then stop"},
		&cli.StringFlag{Name: "until", Usage: "make the periods that start before `DATE`, then stop"},
		&cli.StringFlag{Name: "credit-limit", Usage: "each period's allocation's credit limit `C`"},
		&cli.StringFlag{Name: "carry-over", Usage: "what of a period's leftover moves into the next: none, all, `PERCENT[:CAP]`"},
	}
	return &cli.Command{
		Name: "schedule",
		Usage: "make ACCOUNT an allocation of AMOUNT at the start of every month, quarter or year (the bank makes each period's once, " +
			"journaled as a deposit, and moves what the carry-over rule says of the last period's leftover into it as a transfer)",
		ArgsUsage: "ACCOUNT AMOUNT",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "every", Usage: "the period: month, quarter or year (required)"},
			&cli.StringFlag{Name: "start", Usage: "the first period's start `DATE` (default now)"},
			&cli.StringFlag{Name: "machine", Usage: "the allocations are for `MACHINE` only"},
		}, periods...),
		Action: scheduleAdd,
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "the schedules (of the accounts you read)", Action: scheduleList},
			{Name: "show", Usage: "a schedule, with its periods made and those to come in the next year", ArgsUsage: "ID", Action: scheduleShow},
			{Name: "modify", Usage: "change the periods of a schedule not yet made", ArgsUsage: "ID",
				Flags: append([]cli.Flag{&cli.StringFlag{Name: "amount", Usage: "each period's `AMOUNT`"}}, periods...), Action: scheduleModify},
			{Name: "cancel", Usage: "make no more periods (those made stay)", ArgsUsage: "ID", Action: scheduleCancel},
			{Name: "run", Usage: "make the periods due now, each once (ingot serve does it every minute; this is for a bank file without a server, from cron)",
				Action: localOnly(scheduleRun)},
		},
	}
}

func scheduleAdd(c *cli.Context) error {
	a, err := args(c, "ACCOUNT", "AMOUNT")
	if err != nil {
		return err
	}
	every, err := requiredString(c, "every")
	if err != nil {
		return err
	}
	start, err := parseTimeFlag(c, "start")
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		p, err := b.precision()
		if err != nil {
			return err
		}
		ch, err := readChange(c, p, a[1])
		if err != nil {
			return err
		}
		spec := schedule.Spec{Account: a[0], Every: schedule.Every(every), Start: start, Machine: c.String("machine"), CreditLimit: decimal.Zero}.Apply(ch)
		s, err := b.AddSchedule(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		return showSchedules(c, s, []schedule.Schedule{s}, p)
	})
}

// readChange reads the amount (if given) and the flags a new schedule and
// a change share.
func readChange(c *cli.Context, p int32, amountText string) (schedule.Change, error) {
	var ch schedule.Change
	if amountText != "" {
		amt, err := ledger.ParseAmount(amountText, p)
		if err != nil {
			return ch, err
		}
		ch.Amount = &amt
	}
	return ch, periodFlags(c, p, &ch)
}

// periodFlags reads the flags a new schedule and a change share into ch.
func periodFlags(c *cli.Context, p int32, ch *schedule.Change) error {
	if c.IsSet("count") && c.IsSet("until") {
		return usageError{"--count and --until: a schedule ends after a count of periods or at a date, not both"}
	}
	if c.IsSet("count") {
		n := c.Int("count")
		ch.Count = &n
	}
	if c.IsSet("until") {
		u, err := parseTimeFlag(c, "until")
		if err != nil {
			return err
		}
		ch.Until = &u
	}
	if s := c.String("credit-limit"); s != "" {
		cl, err := ledger.ParseCreditLimit(s, p)
		if err != nil {
			return fmt.Errorf("--credit-limit: %w", err)
		}
		ch.CreditLimit = &cl
	}
	if c.IsSet("carry-over") {
		co, err := schedule.ParseCarryOver(c.String("carry-over"))
		if err != nil {
			return fmt.Errorf("--carry-over: %w", err)
		}
		ch.CarryOver = &co
	}
	return nil
}

func scheduleID(c *cli.Context) (uint64, error) {
	a, err := args(c, "ID")
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(a[0], 10, 64)
	if err != nil || id == 0 {
		return 0, usageError{fmt.Sprintf("%s: ID %q is not a schedule number", commandPath(c), a[0])}
	}
	return id, nil
}

func scheduleList(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		all, err := b.Schedules(c.Context)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		return showSchedules(c, orEmpty(all), all, p)
	})
}

func scheduleShow(c *cli.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		all, err := b.Schedules(c.Context)
		if err != nil {
			return err
		}
		for _, s := range all {
			if s.ID == id {
				p, err := b.precision()
				if err != nil {
					return err
				}
				return showSchedules(c, s, []schedule.Schedule{s}, p)
			}
		}
		return fmt.Errorf("%w: schedule %d", ledger.ErrNotFound, id)
	})
}

func scheduleModify(c *cli.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		p, err := b.precision()
		if err != nil {
			return err
		}
		ch, err := readChange(c, p, c.String("amount"))
		if err != nil {
			return err
		}
		s, err := b.ModifySchedule(c.Context, request(c), id, ch)
		if err != nil {
			return err
		}
		return showSchedules(c, s, []schedule.Schedule{s}, p)
	})
}

func scheduleCancel(c *cli.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		s, err := b.CancelSchedule(c.Context, request(c), id)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		return showSchedules(c, s, []schedule.Schedule{s}, p)
	})
}

func scheduleRun(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	l, _, err := openBank(c, boltstore.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	made, err := schedule.New(l).Run(c.Context)
	t := table{headers: []string{"Schedule", "Account", "Period", "Start", "End", "Allocation"}, data: orEmpty(made)}
	for _, p := range made {
		t.add(strconv.FormatUint(p.Schedule, 10), p.Account, strconv.Itoa(p.Index), localTime(p.Start), localTime(p.End), strconv.FormatUint(p.Allocation, 10))
	}
	if serr := show(c, t); err == nil {
		err = serr
	}
	return err
}

// showSchedules is one line per schedule; data is what --json prints.
func showSchedules(c *cli.Context, data any, all []schedule.Schedule, p int32) error {
	t := table{headers: []string{"Schedule", "Account", "Amount", "Every", "Start", "Periods", "Made", "Machine", "CreditLimit", "CarryOver", "State"}, data: data}
	for _, s := range all {
		periods := "no end"
		switch {
		case s.Count > 0:
			periods = strconv.Itoa(s.Count)
		case !s.Until.IsZero():
			periods = "until " + localTime(s.Until)
		}
		state := "active"
		if s.Cancelled {
			state = "cancelled"
		} else if n := s.Periods(); n >= 0 && s.Made >= n {
			state = "done"
		}
		t.add(strconv.FormatUint(s.ID, 10), s.Account, amount(s.Amount, p), string(s.Every), localTime(s.Start), periods,
			strconv.Itoa(s.Made), orAny(s.Machine), amount(s.CreditLimit, p), s.CarryOver.String(), state)
	}
	return show(c, t)
}

// balanceUpcoming shows the periods of the schedules that start within a
// year: of the accounts named (a project: its account's), else of every
// account read.
func balanceUpcoming(c *cli.Context) error {
	accounts := []string{""}
	if c.NArg() > 0 {
		accounts = nil
		for _, n := range c.Args().Slice() {
			accounts = append(accounts, ledger.AccountOf(n))
		}
	}
	return withBank(c, func(b bank) error {
		until := time.Now().AddDate(1, 0, 0)
		var all []schedule.Period
		for _, a := range accounts {
			ps, err := b.Upcoming(c.Context, a, until)
			if err != nil {
				return err
			}
			all = append(all, ps...)
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Account", "Schedule", "Period", "Start", "End", "Amount"}, data: orEmpty(all)}
		for _, pe := range all {
			t.add(pe.Account, strconv.FormatUint(pe.Schedule, 10), strconv.Itoa(pe.Index), localTime(pe.Start), localTime(pe.End), amount(pe.Amount, p))
		}
		return show(c, t)
	})
}
