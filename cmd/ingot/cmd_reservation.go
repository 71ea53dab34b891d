package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/lien"
)

func reservationCommands() []*cli.Command {
	running := &cli.Int64Flag{Name: "running-proc-seconds", Usage: "processor-seconds that jobs still running inside it used since the last flush (the scheduler's figure)"}
	dryRun := &cli.BoolFlag{Name: "dry-run", Usage: "print what it would charge now, from which allocations, and any overdraft, without charging or recording anything"}
	return []*cli.Command{{
		Name:  "reservation",
		Usage: "chargeable reservations: their idle processor-seconds are charged to their project",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "register a chargeable reservation",
				ArgsUsage: "NAME",
				Flags: []cli.Flag{
					machineFlag(),
					&cli.Int64Flag{Name: "procs", Usage: "processors reserved (required)"},
					&cli.StringFlag{Name: "start", Usage: "when it starts (required)"},
					&cli.StringFlag{Name: "end", Usage: "when it ends (required)"},
					&cli.StringFlag{Name: "user", Usage: "the `USER` it is charged as (required)"},
					&cli.StringFlag{Name: "project", Usage: "the `PROJECT` charged for idle time (default: the user's default project)"},
				},
				Action: reservationAdd,
			},
			{Name: "list", Usage: "list reservations", Action: reservationList},
			{Name: "flush", Usage: "charge the idle processor-seconds since the last flush", ArgsUsage: "NAME", Flags: []cli.Flag{running, dryRun}, Action: reservationFlush(false),
				Description: "A flush is charged however little the account holds: where its allocations and their credit limits do not\n" +
					"cover the idle charge, the first allocation in debit order goes below its credit limit, and a warning says so\n" +
					"(on standard error, and as \"warning\" with --json). --dry-run prints what a flush would charge now, and the\n" +
					"warning, changing nothing."},
			{Name: "end", Usage: "charge the idle processor-seconds since the last flush and close the reservation", ArgsUsage: "NAME", Flags: []cli.Flag{running, dryRun}, Action: reservationFlush(true)},
		},
	}}
}

func reservationAdd(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if !c.IsSet("procs") {
		return missingFlag(c, "procs")
	}
	procs, err := countFlag(c, "procs", 1, charge.MaxCount)
	if err != nil {
		return err
	}
	user, err := requiredString(c, "user")
	if err != nil {
		return err
	}
	spec := lien.ReservationSpec{Name: a[0], Processors: procs, User: user, Project: c.String("project")}
	if spec.Start, err = requiredTime(c, "start"); err != nil {
		return err
	}
	if spec.End, err = requiredTime(c, "end"); err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		if spec.Machine, err = machineOf(c, b); err != nil {
			return err
		}
		r, err := b.AddReservation(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		t := table{headers: []string{"Field", "Value"}, data: r}
		p, err := b.precision()
		if err != nil {
			return err
		}
		reservationRows(&t, r, p)
		return show(c, t)
	})
}

func requiredTime(c *cli.Context, name string) (time.Time, error) {
	if _, err := requiredString(c, name); err != nil {
		return time.Time{}, err
	}
	return parseTimeFlag(c, name)
}

func reservationList(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		rs, err := b.Reservations(c.Context)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Name", "Machine", "Procs", "Start", "End", "Project", "User", "FlushedTo", "Flushes", "Charged", "Ended"}, data: orEmpty(rs)}
		for _, r := range rs {
			t.add(r.Name, r.Machine, strconv.FormatInt(r.Processors, 10), localTime(r.Start), localTime(r.End), r.Project, r.User,
				localTime(r.Flushed), strconv.Itoa(r.Flushes), amount(r.Charged, p), yesNo(r.Ended))
		}
		return show(c, t)
	})
}

// reservationFlush is the action of `flush` and, closing the reservation,
// of `end`.
func reservationFlush(end bool) cli.ActionFunc {
	return func(c *cli.Context) error {
		a, err := args(c, "NAME")
		if err != nil {
			return err
		}
		running, err := countFlag(c, "running-proc-seconds", 0, charge.MaxCPUSeconds)
		if err != nil {
			return err
		}
		return withBank(c, func(b bank) error {
			var r lien.FlushResult
			if c.Bool("dry-run") {
				r, err = b.FlushDryRun(c.Context, a[0], running, end)
			} else {
				r, err = b.Flush(c.Context, request(c), a[0], running, end)
			}
			if err != nil {
				return err
			}
			if r.Warning != "" {
				fmt.Fprintf(c.App.ErrWriter, "ingot: warning: %s\n", r.Warning)
			}
			p, err := b.precision()
			if err != nil {
				return err
			}
			t := table{headers: []string{"Field", "Value"}, data: r}
			if r.DryRun {
				t.add("Dry run", "nothing charged or recorded: what a flush would do now")
			}
			reservationRows(&t, r.Reservation, p)
			t.add("Idle processor-seconds", strconv.FormatInt(r.IdleSeconds, 10))
			if r.Charge == nil {
				t.add("Idle charge", "none")
				return show(c, t)
			}
			debits := make([]string, len(r.Charge.Charge.Debits))
			for i, d := range r.Charge.Charge.Debits {
				debits[i] = fmt.Sprintf("%s from allocation %d", amount(d.Amount, p), d.Allocation)
			}
			if r.DryRun {
				t.add("Idle charge", fmt.Sprintf("would be %s", amount(r.Charge.Charge.Amount, p)))
			} else {
				t.add("Idle charge", fmt.Sprintf("charge %d, %s", r.Charge.Charge.ID, amount(r.Charge.Charge.Amount, p)))
			}
			t.add("Debited", strings.Join(debits, ", "))
			t.add("Overdrawn", amount(r.Charge.Charge.Overdrawn, p))
			explained, err := lien.ExplanationOf(r.Charge.Charge)
			if err != nil {
				return err
			}
			return showExplained(c, t, charge.Amount{Credits: r.Charge.Charge.Amount, Explanation: explained})
		})
	}
}

func reservationRows(t *table, r lien.Reservation, p int32) {
	t.add("Reservation", r.Name)
	t.add("Machine", r.Machine)
	t.add("Procs", strconv.FormatInt(r.Processors, 10))
	t.add("Start", localTime(r.Start))
	t.add("End", localTime(r.End))
	t.add("Project", r.Project)
	t.add("User", r.User)
	t.add("Flushed to", localTime(r.Flushed))
	t.add("Flushes", strconv.Itoa(r.Flushes))
	t.add("Charged", amount(r.Charged, p))
	t.add("Ended", yesNo(r.Ended))
}
