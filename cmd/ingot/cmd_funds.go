package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
)

func fundsCommands() []*cli.Command {
	allocationFlag := &cli.Uint64Flag{Name: "allocation", Aliases: []string{"a"}, Usage: "use only allocation `ID`"}
	return []*cli.Command{
		{
			Name:      "deposit",
			Usage:     "deposit credits into a new allocation of an account, or top up one (--allocation)",
			ArgsUsage: "ACCOUNT AMOUNT",
			Flags: []cli.Flag{allocationFlag, descriptionFlag("the deposit (a new allocation keeps it; the journal and statements show it)"),
				&cli.StringFlag{Name: "start", Usage: "when the new allocation becomes usable (default now)"},
				&cli.StringFlag{Name: "end", Usage: "when it expires (default never)"},
				&cli.StringFlag{Name: "credit-limit", Usage: "how far below zero it may go (default 0); with AMOUNT 0, an allocation of credit alone (allocation modify changes it)"},
				&cli.StringFlag{Name: "machine", Usage: "usable only on `MACHINE` (default any)"},
				&cli.StringFlag{Name: "at", Usage: "deposit at the peer bank `PEER`, into an account its agreement with this bank names: a transaction the server's outbox sends until the peer answers (peer transactions shows it)"},
			},
			Action: deposit,
		},
		{
			Name:      "withdraw",
			Usage:     "take credits out of an account, in debit order, up to what is available",
			ArgsUsage: "ACCOUNT AMOUNT",
			Flags:     []cli.Flag{allocationFlag, descriptionFlag("the withdrawal (the journal and statements show it)")},
			Action:    withdraw,
		},
		{
			Name:      "transfer",
			Usage:     "move credits between accounts; each piece keeps its allocation's start, end and machine",
			ArgsUsage: "FROM TO AMOUNT",
			Flags:     []cli.Flag{allocationFlag, descriptionFlag("the transfer (the journal and statements show it)")},
			Action:    transfer,
		},
	}
}

func deposit(c *cli.Context) error {
	a, err := args(c, "ACCOUNT", "AMOUNT")
	if err != nil {
		return err
	}
	start, err := parseTimeFlag(c, "start")
	if err != nil {
		return err
	}
	var end time.Time
	if s := c.String("end"); s != "" {
		if end, err = ledger.ParseEnd(s, time.Now(), time.Local); err != nil {
			return fmt.Errorf("--end: %w", err)
		}
	}
	return withBank(c, func(b bank) error {
		p, err := b.precision()
		if err != nil {
			return err
		}
		// Zero is for an allocation of credit alone: the bank says when it
		// is not one.
		amt, err := ledger.ParseCreditLimit(a[1], p)
		if err != nil {
			return err
		}
		credit := decimal.Zero
		if s := c.String("credit-limit"); s != "" {
			if credit, err = ledger.ParseCreditLimit(s, p); err != nil {
				return fmt.Errorf("--credit-limit: %w", err)
			}
		}
		spec := ledger.DepositSpec{Account: a[0], Amount: amt, Allocation: c.Uint64("allocation"),
			CreditLimit: credit, Start: start, End: end, Machine: c.String("machine"), Description: c.String("description")}
		if at := c.String("at"); at != "" {
			return depositAt(c, b, at, spec)
		}
		r, err := b.Deposit(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		return showReceipt(c, p, r)
	})
}

func withdraw(c *cli.Context) error {
	a, err := args(c, "ACCOUNT", "AMOUNT")
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		p, err := b.precision()
		if err != nil {
			return err
		}
		amt, err := ledger.ParseAmount(a[1], p)
		if err != nil {
			return err
		}
		r, err := b.Withdraw(c.Context, request(c), ledger.WithdrawSpec{Account: a[0], Amount: amt, Allocation: c.Uint64("allocation"), Description: c.String("description")})
		if err != nil {
			return err
		}
		return showReceipt(c, p, r)
	})
}

func transfer(c *cli.Context) error {
	a, err := args(c, "FROM", "TO", "AMOUNT")
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		p, err := b.precision()
		if err != nil {
			return err
		}
		amt, err := ledger.ParseAmount(a[2], p)
		if err != nil {
			return err
		}
		r, err := b.Transfer(c.Context, request(c), ledger.TransferSpec{From: a[0], To: a[1], Amount: amt, Allocation: c.Uint64("allocation"), Description: c.String("description")})
		if err != nil {
			return err
		}
		return showReceipt(c, p, r)
	})
}

// showReceipt lists each change with the allocation's state after it.
func showReceipt(c *cli.Context, p int32, r ledger.Receipt) error {
	after := map[uint64]ledger.Allocation{}
	for _, a := range r.Allocations {
		after[a.ID] = a
	}
	t := table{headers: []string{"Entry", "Allocation", "Account", "Change", "Amount", "Start", "End", "Machine"}, data: r}
	for _, d := range r.Deltas {
		a := after[d.Allocation]
		change := amount(d.Amount, p)
		if d.Amount.IsPositive() {
			change = "+" + change
		}
		t.add(strconv.FormatUint(r.Seq, 10), strconv.FormatUint(d.Allocation, 10), d.Account, change, amount(a.Amount, p),
			localTime(a.Start), endTime(a.End), orAny(a.Machine))
	}
	return show(c, t)
}

func orAny(machine string) string {
	if machine == "" {
		return "any"
	}
	return machine
}
