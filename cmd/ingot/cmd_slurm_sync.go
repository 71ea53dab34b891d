package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

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
		for _, r := range runs {
			known = append(known, r.ID)
			res, err := site.SettleRun(c.Context, r, dry)
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
	tree := slurm.AccountTree(assocs, cluster)
	plan, err := importPlan(tree, defaults)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error { return applyImport(c, b, plan, c.Bool("dry-run")) })
}

// importPlanned is what the associations ask of the bank: its nodes,
// parents first, and each user's memberships and default project.
type importPlanned struct {
	nodes    []string
	members  map[string][]string
	defaults map[string]string
}

func importPlan(tree slurm.Tree, defaults map[string]string) (importPlanned, error) {
	p := importPlanned{members: map[string][]string{}, defaults: map[string]string{}}
	for account := range tree.Parent {
		path, err := tree.Path(account)
		if err != nil {
			return p, err
		}
		p.nodes = append(p.nodes, path)
	}
	// Parents first: a path sorts after its prefix when dots sort first.
	slices.SortFunc(p.nodes, func(a, b string) int {
		return strings.Compare(strings.ReplaceAll(a, ".", "\x00"), strings.ReplaceAll(b, ".", "\x00"))
	})
	for account, users := range tree.Users {
		if account == "root" {
			continue
		}
		path, err := tree.Path(account)
		if err != nil {
			return p, err
		}
		for _, u := range users {
			p.members[u] = append(p.members[u], path)
			if defaults[u] == account {
				p.defaults[u] = path
			}
		}
	}
	return p, nil
}

func applyImport(c *cli.Context, b bank, p importPlanned, dry bool) error {
	nodes, err := b.Nodes(c.Context, "")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range nodes {
		have[n.Name] = true
	}
	// Read before anything is printed or made: a key that may not read
	// the users (a scheduler's) fails here, not after a plan half printed.
	users, err := b.Users(c.Context)
	if err != nil {
		return fmt.Errorf("slurm import reads the bank's users, which needs the admin's key (a scheduler key may not): %w", err)
	}
	say := func(format string, a ...any) {
		if dry {
			format = "would " + format
		}
		fmt.Fprintf(c.App.Writer, format+"\n", a...)
	}
	for _, name := range p.nodes {
		if have[name] {
			continue
		}
		kind := "project"
		if !strings.Contains(name, ".") {
			kind = "account"
		}
		say("create %s %s", kind, name)
		if dry {
			continue
		}
		// A project in an account split by HFS gets no quota: the import
		// cannot know one; `ingot project policy` sets it.
		spec := ledger.NodeSpec{Name: name, NoQuota: kind == "project"}
		if _, err := b.CreateNode(c.Context, withRequestID(c, client.NewRequestID()), spec); err != nil {
			return err
		}
	}
	existing := map[string]ledger.User{}
	for _, u := range users {
		existing[u.Name] = u
	}
	for _, name := range slices.Sorted(maps.Keys(p.members)) {
		if err := importUser(c, b, existing, name, p.members[name], p.defaults[name], dry, say); err != nil {
			return err
		}
	}
	return nil
}

func importUser(c *cli.Context, b bank, existing map[string]ledger.User, name string, nodes []string, def string, dry bool, say func(string, ...any)) error {
	slices.Sort(nodes)
	u, ok := existing[name]
	if !ok {
		say("add user %s, member of %s, default project %s", name, strings.Join(nodes, ", "), orDefault(def, "none"))
		if dry {
			return nil
		}
		spec := ledger.UserSpec{Name: name, DefaultProject: def}
		for _, n := range nodes {
			spec.Memberships = append(spec.Memberships, ledger.Membership{Node: n, Role: ledger.RoleMember})
		}
		_, err := b.AddUser(c.Context, withRequestID(c, client.NewRequestID()), spec)
		return err
	}
	var change ledger.UserChange
	for _, n := range nodes {
		if u.RoleIn(n) == "" {
			change.Add = append(change.Add, ledger.Membership{Node: n, Role: ledger.RoleMember})
		}
	}
	if u.DefaultProject == "" && def != "" {
		change.DefaultProject = &def
	}
	if len(change.Add) == 0 && change.DefaultProject == nil {
		return nil
	}
	var added []string
	for _, m := range change.Add {
		added = append(added, m.Node)
	}
	say("add to user %s memberships of %s, default project %s", name, orDefault(strings.Join(added, ", "), "none"), orDefault(def, "unchanged"))
	if dry {
		return nil
	}
	_, err := b.ModifyUser(c.Context, withRequestID(c, client.NewRequestID()), name, change)
	return err
}
