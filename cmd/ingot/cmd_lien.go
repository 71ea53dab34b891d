package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// This file holds the lien commands and what quote, lien and charge share:
// the job's resource flags, durations, and the machine a job runs on.

func lienCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "lien",
		Usage: "place, list, show, extend, release and sweep liens (credits held for a job while it runs)",
		Subcommands: []*cli.Command{
			{
				Name:      "place",
				Usage:     "hold the quote of a job's request on its project (or the fallback); again for the same job returns the lien it has",
				ArgsUsage: "JOBID",
				Flags: append(append(partyFlags(), requestFlags()...),
					&cli.Uint64Flag{Name: "quote", Usage: "price with guaranteed quote `ID` (uses it once)"},
					&cli.BoolFlag{Name: "replace", Usage: "re-price the job's active lien instead of returning it"},
				),
				Action: lienPlace,
			},
			{
				Name:      "list",
				Usage:     "list open liens (active, or past their end and not yet swept: shown expired), all or of a node's subtree",
				ArgsUsage: "[NODE]",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "also settled, released and expired liens"}},
				Action:    lienList,
			},
			{Name: "show", Usage: "show a job's newest lien and what it holds on each allocation", ArgsUsage: "JOBID", Flags: []cli.Flag{machineFlag()}, Action: lienShow},
			{
				Name:      "extend",
				Usage:     "raise the wallclock limit of a job's lien; it is re-priced and must still be covered",
				ArgsUsage: "JOBID",
				Flags:     []cli.Flag{machineFlag(), &cli.StringFlag{Name: "wallclock", Usage: "the new wallclock limit (required): " + durationForms}},
				Action:    lienExtend,
			},
			{
				Name:      "modify",
				Usage:     "move the end of a job's lien, later or earlier (as Gold's gchres -e); past its end it holds nothing",
				ArgsUsage: "JOBID",
				Flags:     []cli.Flag{machineFlag(), &cli.StringFlag{Name: "end", Usage: "the lien's new end (required): a `TIME`"}},
				Action:    lienModify,
			},
			{Name: "release", Usage: "end a job's lien without charging it", ArgsUsage: "JOBID", Flags: []cli.Flag{machineFlag()}, Action: lienRelease},
			{Name: "sweep", Usage: "mark liens past their expiry as expired (they already stopped holding credits)", Action: lienSweep},
		},
	}}
}

func machineFlag() cli.Flag {
	return &cli.StringFlag{Name: "machine", Usage: "the `MACHINE` the job runs on (may be left out when the bank has one machine)"}
}

// partyFlags say where a job runs and who pays for it.
func partyFlags() []cli.Flag {
	return []cli.Flag{
		machineFlag(),
		&cli.StringFlag{Name: "user", Usage: "the `USER` running the job (required)"},
		&cli.StringFlag{Name: "project", Usage: "the `PROJECT` to charge (default: the user's default project)"},
	}
}

// machineOf is --machine, or the bank's only machine: most sites have one
// cluster, and a script should not have to name it.
func machineOf(c *cli.Context, b bank) (string, error) {
	if m := c.String("machine"); m != "" {
		return m, nil
	}
	ms, err := b.Machines(c.Context)
	if err != nil {
		return "", err
	}
	if len(ms) == 1 {
		return ms[0].Name, nil
	}
	if len(ms) == 0 {
		return "", fmt.Errorf("%w: the bank has no machine (add one with `ingot machine add`)", ledger.ErrNotFound)
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return "", usageError{fmt.Sprintf("%s: --machine is needed: the bank has %d machines (%s)", commandPath(c), len(ms), strings.Join(names, ", "))}
}

// jobOf is the job named by the JOBID argument on --machine.
func jobOf(c *cli.Context, b bank) (lien.Job, error) {
	a, err := args(c, "JOBID")
	if err != nil {
		return lien.Job{}, err
	}
	m, err := machineOf(c, b)
	return lien.Job{Machine: m, ID: a[0]}, err
}

// withJob runs fn on the bank and the job named by the JOBID argument and
// --machine.
func withJob(c *cli.Context, fn func(bank, lien.Job) error) error {
	return withBank(c, func(b bank) error {
		job, err := jobOf(c, b)
		if err != nil {
			return err
		}
		return fn(b, job)
	})
}

func requiredString(c *cli.Context, name string) (string, error) {
	if s := c.String(name); s != "" {
		return s, nil
	}
	return "", missingFlag(c, name)
}

func missingFlag(c *cli.Context, name string) error {
	return usageError{fmt.Sprintf("%s: --%s is required", commandPath(c), name)}
}

// resourceFlags describe what a job holds; quote, lien and charge share them.
func resourceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Int64Flag{Name: "procs", Usage: "processors (required)"},
		&cli.Int64Flag{Name: "nodes", Usage: "nodes"},
		&cli.Int64Flag{Name: "gpus", Usage: "GPUs"},
		&cli.Int64Flag{Name: "memory-mb", Usage: "memory of the whole job, MB"},
		&cli.Int64Flag{Name: "disk-mb", Usage: "disk of the whole job, MB"},
		&cli.StringFlag{Name: "qos", Usage: "quality of service (priced by QualityOfService rates)"},
		&cli.StringFlag{Name: "partition", Usage: "partition (priced by Partition rates)"},
		&cli.StringFlag{Name: "node-type", Usage: "node type (priced by NodeType rates)"},
		&cli.StringSliceFlag{Name: "license", Usage: "licenses held, `NAME=COUNT` (repeatable; COUNT defaults to 1)"},
	}
}

// requestFlags are what a job asks for: its resources, wallclock limit and
// start.
func requestFlags() []cli.Flag {
	return append(resourceFlags(),
		&cli.StringFlag{Name: "wallclock", Usage: "wallclock limit (required): " + durationForms},
		&cli.StringFlag{Name: "start", Usage: "when the job starts, which time-of-day rates depend on (default now)"},
	)
}

// jobResources reads the resource flags. Bounds are checked here, with the
// flag's name, rather than left to package charge's messages.
func jobResources(c *cli.Context) (charge.Resources, error) {
	if !c.IsSet("procs") {
		return charge.Resources{}, missingFlag(c, "procs")
	}
	r := charge.Resources{QOS: c.String("qos"), Partition: c.String("partition"), NodeType: c.String("node-type")}
	for _, f := range []struct {
		name     string
		min, max int64
		field    *int64
	}{
		{"procs", 1, charge.MaxCount, &r.Processors},
		{"nodes", 0, charge.MaxCount, &r.Nodes},
		{"gpus", 0, charge.MaxCount, &r.GPUs},
		{"memory-mb", 0, charge.MaxMB, &r.MemoryMB},
		{"disk-mb", 0, charge.MaxMB, &r.DiskMB},
	} {
		v, err := countFlag(c, f.name, f.min, f.max)
		if err != nil {
			return charge.Resources{}, err
		}
		*f.field = v
	}
	var err error
	r.Licenses, err = parseLicenses(c.StringSlice("license"))
	return r, err
}

func countFlag(c *cli.Context, name string, min, max int64) (int64, error) {
	v := c.Int64(name)
	if v < min || v > max {
		return 0, usageError{fmt.Sprintf("--%s %d: want %d to %d", name, v, min, max)}
	}
	return v, nil
}

// parseLicenses reads --license values: "matlab=2", or "matlab" for one.
func parseLicenses(specs []string) (map[string]int64, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := map[string]int64{}
	for _, s := range specs {
		name, count, hasCount := strings.Cut(s, "=")
		n := int64(1)
		if hasCount {
			var err error
			if n, err = strconv.ParseInt(count, 10, 64); err != nil || n < 1 || n > charge.MaxCount {
				return nil, usageError{fmt.Sprintf("--license %q: want NAME=COUNT with COUNT 1 to %d", s, charge.MaxCount)}
			}
		}
		if name == "" {
			return nil, usageError{fmt.Sprintf("--license %q names no license", s)}
		}
		if _, dup := out[name]; dup {
			return nil, usageError{fmt.Sprintf("--license %s is given twice", name)}
		}
		out[name] = n
	}
	return out, nil
}

// jobRequest reads the request flags into what a quote or lien prices.
func jobRequest(c *cli.Context) (charge.Request, error) {
	res, err := jobResources(c)
	if err != nil {
		return charge.Request{}, err
	}
	limit, err := secondsFlag(c, "wallclock", true)
	if err != nil {
		return charge.Request{}, err
	}
	if limit == 0 {
		return charge.Request{}, usageError{"--wallclock must be more than 0 seconds: a lien holds the price of the limit"}
	}
	start, err := parseTimeFlag(c, "start")
	return charge.Request{Resources: res, WallclockLimitSeconds: limit, Start: start}, err
}

// durationForms is how durations are written on the command line. A bare
// number is seconds (as sacct's ElapsedRaw and the API's *_seconds fields),
// not Slurm's minutes: the one place where the Slurm form is not read as
// Slurm reads it.
const durationForms = "a Go duration (90m, 2h30m), whole seconds (5400), or Slurm's MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"

// secondsFlag reads a duration flag as whole seconds (0 when not given).
func secondsFlag(c *cli.Context, name string, required bool) (int64, error) {
	s := c.String(name)
	if s == "" {
		if required {
			return 0, usageError{fmt.Sprintf("%s: --%s is required (%s)", commandPath(c), name, durationForms)}
		}
		return 0, nil
	}
	n, err := parseSeconds(s)
	if err != nil {
		return 0, usageError{fmt.Sprintf("--%s %q: %v", name, s, err)}
	}
	return n, nil
}

// parseSeconds reads a duration in one of the durationForms, from 0 to
// charge.MaxSeconds.
func parseSeconds(s string) (int64, error) {
	var n int64
	var err error
	switch {
	case digits(s):
		n, err = strconv.ParseInt(s, 10, 64)
	case strings.Contains(s, ":") || (strings.Contains(s, "-") && !strings.HasPrefix(s, "-")):
		n, err = parseSlurmTime(s)
	default:
		var d time.Duration
		if d, err = time.ParseDuration(s); err == nil && d%time.Second != 0 {
			err = fmt.Errorf("not whole seconds")
		}
		n = int64(d / time.Second)
	}
	if err != nil {
		return 0, fmt.Errorf("want %s", durationForms)
	}
	if n < 0 || n > charge.MaxSeconds {
		return 0, fmt.Errorf("want 0 to %d seconds (ten years)", charge.MaxSeconds)
	}
	return n, nil
}

// parseSlurmTime reads Slurm's time forms: MM:SS and HH:MM:SS, or after a
// day count D-HH, D-HH:MM and D-HH:MM:SS.
func parseSlurmTime(s string) (int64, error) {
	var total int64
	clock := s
	day, rest, hasDays := strings.Cut(s, "-")
	if hasDays {
		d, err := clockField(day, -1)
		if err != nil {
			return 0, err
		}
		total, clock = d*24*3600, rest
	}
	parts := strings.Split(clock, ":")
	var units []int64
	switch {
	case hasDays && len(parts) <= 3:
		units = []int64{3600, 60, 1}[:len(parts)]
	case !hasDays && len(parts) == 2:
		units = []int64{60, 1}
	case !hasDays && len(parts) == 3:
		units = []int64{3600, 60, 1}
	default:
		return 0, fmt.Errorf("%q is not a Slurm time", s)
	}
	for i, p := range parts {
		limit := int64(60) // minutes and seconds after the leading field
		if i == 0 {
			limit = -1 // the leading field may be large (90:00 is 90 minutes)
			if hasDays {
				limit = 24
			}
		}
		v, err := clockField(p, limit)
		if err != nil {
			return 0, err
		}
		total += v * units[i]
	}
	return total, nil
}

// clockField reads one field of a Slurm time, below limit unless limit is -1.
func clockField(s string, limit int64) (int64, error) {
	if !digits(s) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	v, err := strconv.ParseInt(s, 10, 32) // 32 bits: days × 86400 cannot overflow
	if err != nil || (limit >= 0 && v >= limit) {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return v, nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func lienPlace(c *cli.Context) error {
	req, err := jobRequest(c)
	if err != nil {
		return err
	}
	user, err := requiredString(c, "user")
	if err != nil {
		return err
	}
	return withJob(c, func(b bank, job lien.Job) error {
		r, err := b.Place(c.Context, request(c), lien.PlaceSpec{Job: job, User: user, Project: c.String("project"), Request: req,
			Quote: c.Uint64("quote"), Replace: c.Bool("replace")})
		if err != nil {
			return err
		}
		return showLienResult(c, b, r)
	})
}

func lienExtend(c *cli.Context) error {
	limit, err := secondsFlag(c, "wallclock", true)
	if err != nil {
		return err
	}
	return withJob(c, func(b bank, job lien.Job) error {
		r, err := b.Extend(c.Context, request(c), job, limit)
		if err != nil {
			return err
		}
		return showLienResult(c, b, r)
	})
}

func lienModify(c *cli.Context) error {
	if _, err := requiredString(c, "end"); err != nil {
		return err
	}
	end, err := parseTimeFlag(c, "end")
	if err != nil {
		return err
	}
	return withJob(c, func(b bank, job lien.Job) error {
		l, err := b.MoveEnd(c.Context, request(c), job, end)
		if err != nil {
			return err
		}
		return showLien(c, b, l)
	})
}

func lienRelease(c *cli.Context) error {
	return withJob(c, func(b bank, job lien.Job) error {
		l, err := b.Release(c.Context, request(c), job)
		if err != nil {
			return err
		}
		return showLien(c, b, l)
	})
}

func lienShow(c *cli.Context) error {
	return withJob(c, func(b bank, job lien.Job) error {
		l, err := b.JobLien(c.Context, job)
		if err != nil {
			return err
		}
		return showLien(c, b, l)
	})
}

func lienList(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageError{"lien list takes at most one NODE"}
	}
	return withBank(c, func(b bank) error {
		liens, err := b.Liens(c.Context, c.Args().First(), c.Bool("all"))
		if err != nil {
			return err
		}
		return showLiens(c, b, liens)
	})
}

func lienSweep(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		liens, err := b.Sweep(c.Context, request(c))
		if err != nil {
			return err
		}
		return showLiens(c, b, liens)
	})
}

func showLiens(c *cli.Context, b bank, liens []ledger.Lien) error {
	p, err := b.precision()
	if err != nil {
		return err
	}
	t := table{headers: []string{"Lien", "Job", "Machine", "Project", "User", "State", "Amount", "Charged", "Created", "Expires"}, data: orEmpty(liens)}
	for _, l := range liens {
		t.add(strconv.FormatUint(l.ID, 10), l.JobID, l.Machine, l.Project, l.User, string(l.State), amount(l.Amount, p), amount(l.Charged, p),
			localTime(l.Created), localTime(l.Expires))
	}
	return show(c, t)
}

// lienRows are a lien as Field/Value rows, with what it holds on each
// allocation.
func lienRows(t *table, l ledger.Lien, p int32) error {
	rec, err := lien.DetailOf(l)
	if err != nil {
		return err
	}
	t.add("Lien", strconv.FormatUint(l.ID, 10))
	t.add("Job", l.JobID)
	t.add("Machine", l.Machine)
	t.add("Project", l.Project)
	if rec.Requested != "" {
		t.add("Requested project", rec.Requested)
	}
	t.add("User", l.User)
	t.add("State", string(l.State))
	t.add("Policy", rec.Policy.String())
	if rec.Quote != 0 {
		t.add("Guaranteed quote", strconv.FormatUint(rec.Quote, 10))
	}
	t.add("Wallclock limit", fmt.Sprintf("%d s", rec.Request.WallclockLimitSeconds))
	t.add("Amount", amount(l.Amount, p))
	t.add("Charged", amount(l.Charged, p))
	if l.State == ledger.LienActive { // a lien that ended keeps its last holds on record, but holds nothing
		for _, h := range l.Holds {
			t.add(fmt.Sprintf("Held on allocation %d", h.Allocation), amount(h.Amount, p))
		}
	}
	t.add("Created", localTime(l.Created))
	t.add("Expires", localTime(l.Expires))
	return nil
}

func showLien(c *cli.Context, b bank, l ledger.Lien) error {
	t := table{headers: []string{"Field", "Value"}, data: l}
	p, err := b.precision()
	if err != nil {
		return err
	}
	if err := lienRows(&t, l, p); err != nil {
		return err
	}
	return show(c, t)
}

// showLienResult shows a placed or extended lien, first saying whether a
// fallback took the job (the scheduler must then switch the job's account)
// or whether the job already had the lien.
func showLienResult(c *cli.Context, b bank, r lien.LienResult) error {
	t := table{headers: []string{"Field", "Value"}, data: r}
	rec, err := lien.DetailOf(r.Lien)
	if err != nil {
		return err
	}
	switch {
	case r.Existing:
		t.add("Note", fmt.Sprintf("job %s already had lien %d: returned it, nothing changed (--replace re-prices it)", r.Lien.JobID, r.Lien.ID))
	case r.FellBack:
		t.add("Note", fmt.Sprintf("fell back from %s to %s: %s could not cover the lien; switch the job to %s", rec.Requested, r.Project, rec.Requested, r.Project))
	}
	p, err := b.precision()
	if err != nil {
		return err
	}
	if err := lienRows(&t, r.Lien, p); err != nil {
		return err
	}
	if err := homeRows(&t, r.Home, &ledger.Lien{}); err != nil {
		return err
	}
	return showExplained(c, t, r.Quote)
}

// showExplained shows t, then the itemised explanation of a price: as
// text under a table, as item rows under --parsable; --json prints t.data,
// which carries it.
func showExplained(c *cli.Context, t table, a charge.Amount) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if err := write(w, f, t); err != nil || a.Explanation.Subject == "" {
		return err
	}
	switch f {
	case formatTable:
		_, err = fmt.Fprintf(w, "\n%s", a)
	case formatParsable:
		items := table{headers: []string{"Section", "Type", "What", "Window", "Quantity", "Rate", "Seconds", "Multiplier", "Subtotal"}}
		for _, it := range a.Explanation.Items {
			items.add("item", string(it.Type), it.What, it.Window, it.Quantity.String(), it.Rate.String(), strconv.FormatInt(it.Seconds, 10), it.Multiplier.String(), it.Subtotal.String())
		}
		err = write(w, f, items)
	}
	return err
}
