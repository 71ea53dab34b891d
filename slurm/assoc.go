package slurm

import (
	"fmt"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
)

// AssocFormat is the format list that ParseAssoc reads: `sacctmgr -P show
// assoc format=AssocFormat`.
const AssocFormat = "Cluster,Account,User,ParentName"

// Assoc is one association: an account under its parent, or a user in an
// account (User set, Parent empty).
type Assoc struct {
	Cluster, Account, User, Parent string
}

// ParseAssoc reads the output of `sacctmgr -P show assoc
// format=AssocFormat` (with its header line).
func ParseAssoc(out string) ([]Assoc, error) {
	rows, err := parseTable(out, strings.Split(AssocFormat, ","))
	if err != nil {
		return nil, fmt.Errorf("slurm: sacctmgr show assoc: %w", err)
	}
	as := make([]Assoc, 0, len(rows))
	for i, r := range rows {
		a := Assoc{Cluster: r["Cluster"], Account: r["Account"], User: r["User"], Parent: r["ParentName"]}
		if a.Account == "" {
			return nil, fmt.Errorf("slurm: sacctmgr show assoc line %d: no account", i+2)
		}
		as = append(as, a)
	}
	return as, nil
}

// UserFormat is the format list that ParseUsers reads: `sacctmgr -P show
// user format=UserFormat`. sacctmgr heads the default account's column
// "Def Acct".
const UserFormat = "User,DefaultAccount"

// ParseUsers reads the output of `sacctmgr -P show user format=UserFormat`:
// each user's default account ("" if none).
func ParseUsers(out string) (map[string]string, error) {
	rows, err := parseTable(out, []string{"User", "Def Acct"})
	if err != nil {
		return nil, fmt.Errorf("slurm: sacctmgr show user: %w", err)
	}
	users := make(map[string]string, len(rows))
	for _, r := range rows {
		users[r["User"]] = r["Def Acct"]
	}
	return users, nil
}

// Tree is the account tree of one cluster's associations: each account's
// parent ("root" at the top), and each account's users.
type Tree struct {
	Parent map[string]string
	Users  map[string][]string
}

// AccountTree gathers the associations of cluster.
func AccountTree(as []Assoc, cluster string) Tree {
	t := Tree{Parent: map[string]string{}, Users: map[string][]string{}}
	for _, a := range as {
		switch {
		case a.Cluster != cluster:
		case a.User != "":
			t.Users[a.Account] = append(t.Users[a.Account], a.User)
		case a.Account != "root":
			t.Parent[a.Account] = a.Parent
		}
	}
	return t
}

// Path is account's name in the bank: the accounts from below root down to
// it, joined by dots (lab1 under chem under root is chem.lab1), or an error
// if the tree does not reach root from it.
func (t Tree) Path(account string) (string, error) {
	parts := []string{account}
	for a := account; ; {
		p, ok := t.Parent[a]
		if !ok {
			return "", fmt.Errorf("slurm: account %s: not in the association tree", ledger.Excerpt(a))
		}
		if p == "root" || p == "" {
			break
		}
		if len(parts) > len(t.Parent) {
			return "", fmt.Errorf("slurm: account %s: its parents form a loop", ledger.Excerpt(account))
		}
		parts = append(parts, p)
		a = p
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "."), nil
}

// ParseSubmitLimits reads `sacctmgr -P show assoc cluster=C` (its default
// columns): each account's GrpSubmit, the number of jobs its associations
// may have queued and running ("" for no limit).
func ParseSubmitLimits(out string) (map[string]string, error) {
	rows, err := parseTable(out, []string{"Account", "User", "GrpSubmit"})
	if err != nil {
		return nil, fmt.Errorf("slurm: sacctmgr show assoc: %w", err)
	}
	limits := map[string]string{}
	for _, r := range rows {
		if r["User"] == "" {
			limits[r["Account"]] = r["GrpSubmit"]
		}
	}
	return limits, nil
}
