package main

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
)

func allocationCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "allocation",
		Usage: "change an allocation's terms (its amounts move by deposit, withdraw, transfer, charge and refund)",
		Subcommands: []*cli.Command{{
			Name:      "modify",
			Usage:     "change an allocation's credit limit (as Gold's gchalloc -L)",
			ArgsUsage: "ALLOCATION_ID",
			Flags:     []cli.Flag{&cli.StringFlag{Name: "credit-limit", Usage: "how far below zero it may go (required; 0 takes its credit away)"}},
			Action:    allocationModify,
		}, scheduleCommand()},
	}}
}

func allocationModify(c *cli.Context) error {
	a, err := args(c, "ALLOCATION_ID")
	if err != nil {
		return err
	}
	id, err := strconv.ParseUint(a[0], 10, 64)
	if err != nil || id == 0 {
		return usageError{fmt.Sprintf("allocation modify: ALLOCATION_ID %q is not an allocation number", a[0])}
	}
	limit, err := requiredString(c, "credit-limit")
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		p, err := b.precision()
		if err != nil {
			return err
		}
		credit, err := ledger.ParseCreditLimit(limit, p)
		if err != nil {
			return fmt.Errorf("--credit-limit: %w", err)
		}
		al, err := b.ModifyAllocation(c.Context, request(c), id, ledger.AllocationChange{CreditLimit: &credit})
		if err != nil {
			return err
		}
		t := table{headers: []string{"Allocation", "Account", "Start", "End", "Machine", "Deposited", "Amount", "CreditLimit", "Description"}, data: al}
		t.add(strconv.FormatUint(al.ID, 10), al.Account, localTime(al.Start), endTime(al.End), orAny(al.Machine), amount(al.Deposited, p),
			amount(al.Amount, p), amount(al.CreditLimit, p), al.Description)
		return show(c, t)
	})
}
