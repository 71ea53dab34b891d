package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

func rateCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "rate",
		Usage: "show and change the rate table (Gold's charge rates, time-of-day and day-of-week multipliers)",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "the rate table in force; --json prints it in the form `rate set` reads", Action: rateList},
			{
				Name:      "add",
				Usage:     "add or replace a rate: `rate add VBR Processors 1`, `rate add NBM QualityOfService=premium 2`",
				ArgsUsage: "TYPE NAME[=INSTANCE] RATE",
				Flags:     []cli.Flag{descriptionFlag("the rate (rate list shows it)")},
				Action:    rateAdd,
			},
			{Name: "delete", Usage: "remove a rate (asks on a terminal)", ArgsUsage: "TYPE NAME[=INSTANCE]", Flags: []cli.Flag{yesFlag()}, Action: rateDelete},
			{
				Name:  "window",
				Usage: "time-of-day and day-of-week multipliers",
				Subcommands: []*cli.Command{
					{
						Name:      "add",
						Usage:     "add or replace a window: --start HH:MM --end HH:MM (time of day), or --days Sat,Sun",
						ArgsUsage: "NAME",
						Flags: []cli.Flag{
							&cli.StringFlag{Name: "start", Usage: "time-of-day window start, `HH:MM` in the table's zone"},
							&cli.StringFlag{Name: "end", Usage: "time-of-day window end, `HH:MM` (before the start: the window wraps past midnight)"},
							&cli.StringSliceFlag{Name: "days", Usage: "day-of-week window days, e.g. Sat,Sun"},
							&cli.StringFlag{Name: "multiplier", Usage: "what the time-scaled charge is multiplied by in the window (required)"},
						},
						Action: windowAdd,
					},
					{Name: "delete", Usage: "remove a window (asks on a terminal)", ArgsUsage: "NAME", Flags: []cli.Flag{yesFlag()}, Action: windowDelete},
				},
			},
			{Name: "zone", Usage: "the IANA time zone the windows are read in (e.g. Europe/Paris; UTC by default)", ArgsUsage: "ZONE", Action: rateZone},
			{Name: "set", Usage: "replace the whole table with FILE (JSON as `rate list --json` prints; - for standard input; asks on a terminal)", ArgsUsage: "FILE",
				Flags: []cli.Flag{yesFlag()}, Action: rateSet},
		},
	}}
}

func rateList(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		t, err := b.Rates(c.Context)
		if err != nil {
			return err
		}
		return showRates(c, t)
	})
}

// showRates prints the rates, then the time-of-day and day-of-week windows;
// --parsable starts each row with its section, as `statement` does.
func showRates(c *cli.Context, t charge.RateTable) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if f == formatJSON {
		return writeJSON(w, t)
	}
	zone := t.Location
	if zone == "" {
		zone = "UTC"
	}
	rates := table{headers: []string{"Type", "Name", "Instance", "Rate", "Description"}}
	for _, r := range t.Rates {
		rates.add(string(r.Type), r.Name, r.Instance, r.Rate.String(), r.Description)
	}
	clock := table{headers: []string{"Name", "Start", "End", "Multiplier", "Zone"}}
	for _, tw := range t.TimeOfDay {
		clock.add(tw.Name, tw.Start, tw.End, tw.Multiplier.String(), zone)
	}
	days := table{headers: []string{"Name", "Days", "Multiplier", "Zone"}}
	for _, dw := range t.DaysOfWeek {
		days.add(dw.Name, strings.Join(dw.Days, ","), dw.Multiplier.String(), zone)
	}
	for i, s := range []struct {
		section, title string
		t              table
	}{{"rate", "", rates}, {"time", "Time-of-day windows", clock}, {"day", "Day-of-week windows", days}} {
		if f == formatTable && i > 0 {
			fmt.Fprintf(w, "\n%s\n", s.title)
		}
		if f == formatParsable {
			s.t = withSection(s.t, s.section)
		}
		if err := write(w, f, s.t); err != nil {
			return err
		}
	}
	return nil
}

// withSection prefixes every row of t with a Section column.
func withSection(t table, section string) table {
	out := table{headers: append([]string{"Section"}, t.headers...)}
	for _, r := range t.rows {
		out.add(append([]string{section}, r...)...)
	}
	return out
}

// changeRates reads the table in force, lets change modify it and stores
// it; the bank validates it, so the charge package's message reaches the
// user with exit code 2.
func changeRates(c *cli.Context, change func(*charge.RateTable) error) error {
	return withBank(c, func(b bank) error {
		t, err := b.Rates(c.Context)
		if err != nil {
			return err
		}
		if err := change(&t); err != nil {
			return err
		}
		if _, err := b.SetRates(c.Context, request(c), t); err != nil {
			return err
		}
		// Read back: the bank stores the table as given and spells it
		// canonically (Gold's names, full day names) when it loads it.
		if t, err = b.Rates(c.Context); err != nil {
			return err
		}
		return showRates(c, t)
	})
}

// rateKey reads TYPE and NAME[=INSTANCE].
func rateKey(typ, nameInstance string) charge.ChargeRate {
	name, instance, _ := strings.Cut(nameInstance, "=")
	return charge.ChargeRate{Type: charge.RateType(strings.ToUpper(typ)), Name: name, Instance: instance}
}

// sameRate reports whether two rates have the same type, name and
// instance, which match case-insensitively as in pricing.
func sameRate(a, b charge.ChargeRate) bool {
	return strings.EqualFold(string(a.Type), string(b.Type)) && strings.EqualFold(a.Name, b.Name) && strings.EqualFold(a.Instance, b.Instance)
}

func rateAdd(c *cli.Context) error {
	a, err := args(c, "TYPE", "NAME[=INSTANCE]", "RATE")
	if err != nil {
		return err
	}
	r := rateKey(a[0], a[1])
	if r.Rate, err = decimal.NewFromString(a[2]); err != nil {
		return usageError{fmt.Sprintf("rate add: RATE %q is not a number", a[2])}
	}
	r.Description = c.String("description")
	return changeRates(c, func(t *charge.RateTable) error {
		if i := slices.IndexFunc(t.Rates, func(x charge.ChargeRate) bool { return sameRate(x, r) }); i >= 0 {
			t.Rates[i] = r
		} else {
			t.Rates = append(t.Rates, r)
		}
		return nil
	})
}

func rateDelete(c *cli.Context) error {
	a, err := args(c, "TYPE", "NAME[=INSTANCE]")
	if err != nil {
		return err
	}
	r := rateKey(a[0], a[1])
	if err := confirm(c, fmt.Sprintf("delete rate %s %s? Jobs are priced without it from now on.", a[0], a[1])); err != nil {
		return err
	}
	return changeRates(c, func(t *charge.RateTable) error {
		n := len(t.Rates)
		t.Rates = slices.DeleteFunc(t.Rates, func(x charge.ChargeRate) bool { return sameRate(x, r) })
		if len(t.Rates) == n {
			return fmt.Errorf("%w: no rate %s %s in the table", ledger.ErrNotFound, a[0], a[1])
		}
		return nil
	})
}

func windowAdd(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	m, err := requiredString(c, "multiplier")
	if err != nil {
		return err
	}
	multiplier, err := decimal.NewFromString(m)
	if err != nil {
		return usageError{fmt.Sprintf("--multiplier %q is not a number", m)}
	}
	days := c.StringSlice("days")
	clock := c.IsSet("start") || c.IsSet("end")
	if clock == (len(days) > 0) {
		return usageError{"rate window add: give --start and --end (a time of day) or --days (days of the week)"}
	}
	return changeRates(c, func(t *charge.RateTable) error {
		removeWindow(t, a[0])
		if clock {
			t.TimeOfDay = append(t.TimeOfDay, charge.TimeWindow{Name: a[0], Start: c.String("start"), End: c.String("end"), Multiplier: multiplier})
		} else {
			t.DaysOfWeek = append(t.DaysOfWeek, charge.DayWindow{Name: a[0], Days: days, Multiplier: multiplier})
		}
		return nil
	})
}

func windowDelete(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if err := confirm(c, fmt.Sprintf("delete window %s? Jobs are priced without it from now on.", a[0])); err != nil {
		return err
	}
	return changeRates(c, func(t *charge.RateTable) error {
		if !removeWindow(t, a[0]) {
			return fmt.Errorf("%w: no window named %q in the table", ledger.ErrNotFound, a[0])
		}
		return nil
	})
}

// removeWindow removes the windows named name, of either kind: a name
// says which window to replace or delete whatever its kind.
func removeWindow(t *charge.RateTable, name string) bool {
	n := len(t.TimeOfDay) + len(t.DaysOfWeek)
	t.TimeOfDay = slices.DeleteFunc(t.TimeOfDay, func(w charge.TimeWindow) bool { return w.Name == name })
	t.DaysOfWeek = slices.DeleteFunc(t.DaysOfWeek, func(w charge.DayWindow) bool { return w.Name == name })
	return len(t.TimeOfDay)+len(t.DaysOfWeek) < n
}

func rateZone(c *cli.Context) error {
	a, err := args(c, "ZONE")
	if err != nil {
		return err
	}
	return changeRates(c, func(t *charge.RateTable) error {
		t.Location = a[0]
		return nil
	})
}

func rateSet(c *cli.Context) error {
	a, err := args(c, "FILE")
	if err != nil {
		return err
	}
	data, err := readInput(c, a[0])
	if err != nil {
		return fmt.Errorf("rate set: %w", err)
	}
	t, err := charge.DecodeRateTable(data)
	if err != nil {
		return fmt.Errorf("%w: rate set %s: %v", ledger.ErrInvalid, a[0], err)
	}
	if err := confirm(c, fmt.Sprintf("replace the whole rate table with %s? The rates and windows not in it are deleted.", a[0])); err != nil {
		return err
	}
	return changeRates(c, func(old *charge.RateTable) error {
		*old = t
		return nil
	})
}

// readInput reads a file, or standard input for "-".
func readInput(c *cli.Context, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(c.App.Reader)
	}
	return os.ReadFile(path)
}
