package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/lien"
)

// none removes a scoped setting (and, globally, restores the default).
const none = "none"

func policyCommands() []*cli.Command {
	scope := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "machine", Usage: "set it for jobs on `MACHINE` only"},
			&cli.StringFlag{Name: "project", Usage: "set it for `PROJECT` and its subtree only (over the machine's)"},
		}
	}
	return []*cli.Command{{
		Name:  "policy",
		Usage: "charge policies, fallback accounts and the lien grace period",
		Subcommands: []*cli.Command{
			{Name: "show", Usage: "the settings in force, globally, per machine and per project", Action: policyShow},
			{
				Name:      "set",
				Usage:     "set the charge policy (DEBITSUCCESSFULWC, DEBITALLCPU, ...), globally or for a machine or project; none removes it (asks on a terminal)",
				ArgsUsage: "POLICY|none",
				Flags:     append(scope(), yesFlag()),
				Action:    policySet,
			},
			{
				Name:      "fallback",
				Usage:     "where a lien goes when its project cannot cover it: an account or project, or +SUFFIX appended to the project's name; none removes it (asks on a terminal)",
				ArgsUsage: "TARGET|none",
				Flags:     append(scope(), yesFlag()),
				Action:    policyFallback,
			},
			{Name: "grace", Usage: "how long a lien outlives its job's wallclock limit (default 10m)", ArgsUsage: "DURATION", Action: policyGrace},
		},
	}}
}

func policyShow(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		cfg, err := b.Config(c.Context)
		if err != nil {
			return err
		}
		return showConfig(c, cfg)
	})
}

func policySet(c *cli.Context) error {
	a, err := args(c, "POLICY")
	if err != nil {
		return err
	}
	var p charge.Policy // the zero policy removes a scoped one
	if a[0] != none {
		if p, err = charge.ParsePolicy(a[0]); err != nil {
			return usageError{fmt.Sprintf("policy set: %v", err)}
		}
	} else if err := confirmRemoval(c, "charge policy"); err != nil {
		return err
	}
	return changeConfig(c, lien.ConfigChange{Policy: &p})
}

func policyFallback(c *cli.Context) error {
	a, err := args(c, "TARGET")
	if err != nil {
		return err
	}
	target := a[0]
	if target == none {
		target = "" // the empty fallback removes one
		if err := confirmRemoval(c, "fallback"); err != nil {
			return err
		}
	}
	return changeConfig(c, lien.ConfigChange{Fallback: &target})
}

func policyGrace(c *cli.Context) error {
	a, err := args(c, "DURATION")
	if err != nil {
		return err
	}
	seconds, err := parseSeconds(a[0])
	if err != nil {
		return usageError{fmt.Sprintf("policy grace %q: %v", a[0], err)}
	}
	grace := time.Duration(seconds) * time.Second
	return changeConfig(c, lien.ConfigChange{Grace: &grace})
}

// scopeOf is the scope of --machine or --project.
func scopeOf(c *cli.Context) lien.Scope {
	return lien.Scope{Machine: c.String("machine"), Project: c.String("project")}
}

// confirmRemoval asks before a setting is removed at the scope of the
// flags.
func confirmRemoval(c *cli.Context, setting string) error {
	where := "the global " + setting
	if s := scopeOf(c); s != (lien.Scope{}) {
		where = fmt.Sprintf("the %s of %s", setting, s)
	}
	return confirm(c, fmt.Sprintf("remove %s? Jobs are charged without it from now on.", where))
}

// changeConfig applies ch at the scope of --machine or --project.
func changeConfig(c *cli.Context, ch lien.ConfigChange) error {
	ch.Scope = scopeOf(c)
	return withBank(c, func(b bank) error {
		cfg, err := b.ChangeConfig(c.Context, request(c), ch)
		if err != nil {
			return err
		}
		return showConfig(c, cfg)
	})
}

// showConfig lists every setting as Scope, Setting, Value.
func showConfig(c *cli.Context, cfg lien.Config) error {
	t := table{headers: []string{"Scope", "Setting", "Value"}, data: cfg}
	global := cfg.Policy.String()
	if cfg.Policy == 0 {
		global = charge.DefaultPolicy.String() + " (default)"
	}
	t.add("global", "policy", global)
	addScoped(&t, "policy", "machine", cfg.MachinePolicies, charge.Policy.String)
	addScoped(&t, "policy", "project", cfg.ProjectPolicies, charge.Policy.String)
	fallback := cfg.Fallback
	if fallback == "" {
		fallback = none
	}
	t.add("global", "fallback", fallback)
	addScoped(&t, "fallback", "machine", cfg.MachineFallbacks, func(s string) string { return s })
	addScoped(&t, "fallback", "project", cfg.ProjectFallbacks, func(s string) string { return s })
	t.add("global", "grace", (time.Duration(cfg.GraceSeconds) * time.Second).String())
	return show(c, t)
}

// addScoped adds one row per machine or project that sets the setting, in
// name order.
func addScoped[V any](t *table, setting, kind string, m map[string]V, text func(V) string) {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		t.add(kind+" "+name, setting, text(m[name]))
	}
}
