package slurm

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
)

// ImportPlan is what `ingot slurm import` asks of the bank: each Slurm
// account under root an account of the bank, each one below a project named
// by its path (lab1 under chem is chem.lab1), each user with memberships of
// the accounts it is in and its default account as its default project.
// What exists is kept, so importing again changes only what Slurm gained.
// It holds the bank's nodes, parents first, and each user's memberships
// and default project.
type ImportPlan struct {
	nodes    []string
	members  map[string][]string
	defaults map[string]string
}

// PlanImport is what the associations of tree and the users' default
// accounts ask of the bank.
func PlanImport(tree Tree, defaults map[string]string) (ImportPlan, error) {
	p := ImportPlan{members: map[string][]string{}, defaults: map[string]string{}}
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

// ImportBank is what an import asks of the bank.
type ImportBank interface {
	Nodes(ctx context.Context, prefix string) ([]ledger.Node, error)
	CreateNode(ctx context.Context, req ledger.Request, spec ledger.NodeSpec) (ledger.Node, error)
	Users(ctx context.Context) ([]ledger.User, error)
	AddUser(ctx context.Context, req ledger.Request, spec ledger.UserSpec) (ledger.User, error)
	ModifyUser(ctx context.Context, req ledger.Request, name string, change ledger.UserChange) (ledger.User, error)
}

// Apply creates in b what the plan asks and b lacks, each change a request
// of its own (newRequest), and says each on out ("would ..." with dry,
// which changes nothing).
func (p ImportPlan) Apply(ctx context.Context, b ImportBank, newRequest func() ledger.Request, out io.Writer, dry bool) error {
	nodes, err := b.Nodes(ctx, "")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range nodes {
		have[n.Name] = true
	}
	// Read before anything is printed or made: a key that may not read
	// the users (a scheduler's) fails here, not after a plan half printed.
	users, err := b.Users(ctx)
	if err != nil {
		return fmt.Errorf("slurm import reads the bank's users, which needs the admin's key (a scheduler key may not): %w", err)
	}
	say := func(format string, a ...any) {
		if dry {
			format = "would " + format
		}
		fmt.Fprintf(out, format+"\n", a...)
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
		if _, err := b.CreateNode(ctx, newRequest(), spec); err != nil {
			return err
		}
	}
	existing := map[string]ledger.User{}
	for _, u := range users {
		existing[u.Name] = u
	}
	for _, name := range slices.Sorted(maps.Keys(p.members)) {
		if err := importUser(ctx, b, newRequest, existing, name, p.members[name], p.defaults[name], dry, say); err != nil {
			return err
		}
	}
	return nil
}

func importUser(ctx context.Context, b ImportBank, newRequest func() ledger.Request, existing map[string]ledger.User, name string, nodes []string, def string, dry bool, say func(string, ...any)) error {
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
		_, err := b.AddUser(ctx, newRequest(), spec)
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
	_, err := b.ModifyUser(ctx, newRequest(), name, change)
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
