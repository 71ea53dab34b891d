package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/slurm"
)

// slurmSync charges, from `sacct -D`, each ended run of a job the bank has
// no final charge for (an epilog that failed, timed out, or ran while the
// bank was down; a requeued run whose record slurmdbd did not have yet),
// and releases the active liens of jobs neither sacct nor squeue knows any
// more. A run is the bank's job of its own (slurm.RunJobID), as the hooks
// name it, so two syncs, or a sync and a late epilog, charge a run once. A
// run it could not settle makes it exit non-zero once it has done the rest,
// and counts in --metrics-file's ingot_slurm_unsettled_jobs.
func slurmSync(c *cli.Context) error {
	machine, cluster, err := slurmCluster(c)
	if err != nil {
		return err
	}
	since, err := parseTimeFlag(c, "since")
	if err != nil {
		return err
	}
	nodeFail, err := slurm.ParseNodeFail(c.String("node-fail"))
	if err != nil {
		return usageError{err.Error()}
	}
	// %A is each job's own number, as the hooks know it; %i would print
	// an array's tasks as ARRAYID_TASK.
	queued, err := runSlurm(c.Context, "squeue", "-h", "-t", "all", "-o", "%A")
	if err != nil {
		return err
	}
	known := strings.Fields(queued)
	dry := c.Bool("dry-run")
	var report slurm.Report
	err = withBank(c, func(b bank) error {
		site := clusterSite(c, b, machine, cluster, nodeFail)
		runs, err := site.Runs(c.Context, "-S", since.Local().Format("2006-01-02T15:04:05"), "-E", "now")
		if err != nil {
			return err
		}
		meter := progress.New(c.App.ErrWriter, "ingot slurm sync", "runs", int64(len(runs)))
		defer meter.Stop()
		for i, r := range runs {
			known = append(known, r.ID)
			res, err := site.SettleRun(c.Context, r, dry)
			meter.Set(int64(i + 1))
			if err != nil {
				return err
			}
			report.Add(r, res)
			if res.Problem != "" {
				fmt.Fprintf(c.App.ErrWriter, "ingot slurm sync: job %s run %d: not settled: %s\n", r.ID, r.Number, res.Problem)
			}
		}
		if err := site.ReleaseForgotten(c.Context, known, dry); err != nil {
			return err
		}
		if err := site.Reservations(c.Context, client.NewRequestID, dry); err != nil {
			return err
		}
		if c.Bool("limits") {
			return site.Limits(c.Context, c.StringSlice("free-accounts"), dry)
		}
		return nil
	})
	if c.Bool("report") {
		report.Print(c.App.Writer, since)
	}
	if file := c.String("metrics-file"); file != "" && !dry {
		unsettled := report.Unsettled
		if err != nil {
			unsettled = -1 // sync did not finish: nobody knows
		}
		if werr := slurm.WriteMetrics(file, cluster, unsettled, err == nil, time.Now()); werr != nil && err == nil {
			err = werr
		}
	}
	if err == nil && report.Unsettled > 0 && !dry {
		return fmt.Errorf("slurm sync: %d run(s) of jobs not settled (above): fix them (the account in the bank, a project's membership) and sync again", report.Unsettled)
	}
	return err
}

// clusterSite is the cluster and bank of this command line, for package
// slurm's logic.
func clusterSite(c *cli.Context, b bank, machine, cluster string, nodeFail slurm.NodeFail) *slurm.Site {
	return &slurm.Site{Bank: b, Run: runSlurm, Machine: machine, Cluster: cluster, NodeFail: nodeFail,
		Request: func(id string) ledger.Request { return withRequestID(c, id) },
		Refused: refusedByBank, NotFound: func(err error) bool { return exitCode(err) == exitNotFound }, Message: message,
		Out: c.App.Writer, Log: c.App.ErrWriter}
}

// slurmBilling is the billing TRES of the bank's rate table.
func slurmBilling(c *cli.Context, b bank) (slurm.Billing, error) {
	rates, err := b.Rates(c.Context)
	if err != nil {
		return slurm.Billing{}, err
	}
	return slurm.BillingOf(rates)
}

// slurmCluster checks that sync or import has no arguments and returns the
// bank's machine and the Slurm cluster to read (--cluster, else the same).
func slurmCluster(c *cli.Context) (machine, cluster string, err error) {
	if _, err := args(c); err != nil {
		return "", "", err
	}
	if machine, err = slurmMachine(c); err != nil {
		return "", "", err
	}
	return machine, orDefault(c.String("cluster"), machine), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// slurmImport makes the bank's tree and users from Slurm's associations:
// each account under root an account of the bank, each one below a project
// named by its path, each user with memberships of the accounts it is in
// and its default account as its default project. What exists is kept, so
// running it again changes only what Slurm gained; each change has an id
// of its own (not --request-id: there are many).
func slurmImport(c *cli.Context) error {
	_, cluster, err := slurmCluster(c)
	if err != nil {
		return err
	}
	assocOut, err := runSlurm(c.Context, "sacctmgr", "-P", "show", "assoc", "cluster="+cluster, "format="+slurm.AssocFormat)
	if err != nil {
		return err
	}
	assocs, err := slurm.ParseAssoc(assocOut)
	if err != nil {
		return err
	}
	usersOut, err := runSlurm(c.Context, "sacctmgr", "-P", "show", "user", "format="+slurm.UserFormat)
	if err != nil {
		return err
	}
	defaults, err := slurm.ParseUsers(usersOut)
	if err != nil {
		return err
	}
	plan, err := slurm.PlanImport(slurm.AccountTree(assocs, cluster), defaults)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		return plan.Apply(c.Context, b, func() ledger.Request { return withRequestID(c, client.NewRequestID()) }, c.App.Writer, c.Bool("dry-run"))
	})
}
