package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// quoteCommands: `ingot quote` prices a job; `ingot quote list` lists the
// guaranteed quotes.
func quoteCommands() []*cli.Command {
	flags := append(append(partyFlags(), requestFlags()...),
		&cli.BoolFlag{Name: "guarantee", Usage: "freeze the price: the rate table, policy and node shape are kept for the jobs that use the quote"},
		&cli.StringFlag{Name: "valid-for", Usage: "how long a guaranteed quote may be used (required with --guarantee): " + durationForms},
		&cli.IntFlag{Name: "uses", Value: 1, Usage: "how many jobs may use a guaranteed quote"},
	)
	return []*cli.Command{{
		Name:   "quote",
		Usage:  "price a job under the rates and charge policy in force (as its lien would be), or guarantee the price",
		Flags:  flags,
		Action: quote,
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list guaranteed quotes", Action: quoteList},
		},
	}}
}

func quote(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError{fmt.Sprintf("quote takes no arguments (got %q; `ingot quote list` lists guaranteed quotes)", c.Args().First())}
	}
	req, err := jobRequest(c)
	if err != nil {
		return err
	}
	user, err := requiredString(c, "user")
	if err != nil {
		return err
	}
	validFor, err := guaranteeTerms(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		machine, err := machineOf(c, b)
		if err != nil {
			return err
		}
		spec := lien.QuoteSpec{Machine: machine, User: user, Project: c.String("project"), Request: req}
		if !c.Bool("guarantee") {
			r, err := b.Quote(c.Context, spec)
			if err != nil {
				return err
			}
			t := table{headers: []string{"Field", "Value"}, data: r}
			t.add("Project", r.Project)
			t.add("Machine", machine)
			t.add("Policy", r.Amount.Explanation.Policy.String())
			p, err := b.precision()
			if err != nil {
				return err
			}
			t.add("Amount", amount(r.Amount.Credits, p))
			t.add("Available", amount(r.Available, p))
			t.add("Lien now", coverage(r))
			if err := showExplained(c, t, r.Amount); err != nil {
				return err
			}
			if !r.Covered {
				// As Gold's quote: the price is printed, and the exit
				// code says the job's lien would be refused.
				return fmt.Errorf("quote: the job's lien would be refused now: %w: %s", ledger.ErrInsufficientFunds, strings.TrimPrefix(r.Refusal, ledger.ErrInsufficientFunds.Error()+": "))
			}
			return nil
		}
		settings, err := b.settings() // the guarantee runs from the bank's clock
		if err != nil {
			return err
		}
		expires := settings.Now.Add(time.Duration(validFor) * time.Second)
		q, err := b.Guarantee(c.Context, request(c), spec, expires, c.Int("uses"))
		if err != nil {
			return err
		}
		t := table{headers: []string{"Field", "Value"}, data: q}
		p, err := b.precision()
		if err != nil {
			return err
		}
		quoteRows(&t, q, p)
		return showExplained(c, t, q.Amount)
	})
}

// guaranteeTerms checks the guarantee flags and returns --valid-for in
// seconds.
func guaranteeTerms(c *cli.Context) (int64, error) {
	if !c.Bool("guarantee") {
		if c.IsSet("valid-for") || c.IsSet("uses") {
			return 0, usageError{"--valid-for and --uses are for a guaranteed quote: add --guarantee"}
		}
		return 0, nil
	}
	validFor, err := secondsFlag(c, "valid-for", true)
	if err == nil && validFor == 0 {
		err = usageError{"--valid-for must be more than 0 seconds"}
	}
	return validFor, err
}

func quoteRows(t *table, q lien.StoredQuote, p int32) {
	t.add("Quote", strconv.FormatUint(q.ID, 10))
	t.add("Machine", q.Machine)
	t.add("Project", q.Project)
	t.add("User", q.User)
	t.add("Policy", q.Policy.String())
	t.add("Amount", amount(q.Amount.Credits, p))
	t.add("Created", localTime(q.Created))
	t.add("Expires", localTime(q.Expires))
	t.add("Used", fmt.Sprintf("%d of %d", q.Used, q.Uses))
}

func quoteList(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		qs, err := b.Quotes(c.Context)
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Quote", "Machine", "Project", "User", "Policy", "Amount", "Created", "Expires", "Used", "Uses"}, data: orEmpty(qs)}
		for _, q := range qs {
			t.add(strconv.FormatUint(q.ID, 10), q.Machine, q.Project, q.User, q.Policy.String(), amount(q.Amount.Credits, p),
				localTime(q.Created), localTime(q.Expires), strconv.Itoa(q.Used), strconv.Itoa(q.Uses))
		}
		return show(c, t)
	})
}

// coverage says in a word or two whether a lien for the quoted job would
// be granted now, and where.
func coverage(r lien.QuoteResult) string {
	switch {
	case r.Fallback != "":
		return "granted on the fallback " + r.Fallback
	case r.Covered:
		return "granted"
	}
	return "refused"
}
