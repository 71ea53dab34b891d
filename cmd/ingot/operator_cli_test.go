package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
)

// The tests of this file are issue 30's: a command line that never
// surprises a new operator.

// TestHugeInputIsNotEchoed: a 5,000-character name is refused with a
// message that names the problem and quotes the start of the input, not
// all of it.
func TestHugeInputIsNotEchoed(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	huge := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"account name", []string{"account", "create", huge}, exitUsage},
		{"project name", []string{"project", "create", "chem." + huge + "!"}, exitUsage},
		{"account as project", []string{"project", "create", huge}, exitUsage},
		{"unknown account", []string{"deposit", huge, "5"}, exitNotFound},
		{"amount", []string{"deposit", "chem", huge}, exitUsage},
		{"quota", []string{"project", "create", "chem.lab1", "--quota", "dynamic:" + huge}, exitUsage},
		{"user", []string{"user", "add", huge + "!"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.refused(t, tc.code, "characters)", tc.args...)
			if out, _ := b.run(tc.args...); len(out) > 400 {
				t.Errorf("the message has %d bytes:\n%.500s", len(out), out)
			}
		})
	}
}

// TestEveryFlagHasHelp: every flag of every command says what it does in
// --help, and no usage line says "a account".
func TestEveryFlagHasHelp(t *testing.T) {
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := path + " " + c.Name
			if strings.Contains(c.Usage, "a account") {
				t.Errorf("%s: usage %q", name, c.Usage)
			}
			for _, f := range c.Flags {
				if df, ok := f.(cli.DocGenerationFlag); ok && df.GetUsage() == "" {
					t.Errorf("%s --%s has no help text", name, f.Names()[0])
				}
			}
			walk(name, c.Subcommands)
		}
	}
	walk("ingot", newApp(io.Discard, io.Discard).Commands)
	var out bytes.Buffer
	run([]string{"ingot", "account", "--help"}, &out, &out)
	if !strings.Contains(out.String(), "create an account") {
		t.Errorf("ingot account --help:\n%s", &out)
	}
}

// TestDepositDatesAreUsedOrRefused: a start or end that is given is used
// or refused with a reason, never read as "now" or "never"; and an
// allocation that has already ended is refused (a typo in the year, not a
// grant: its credits could never be spent, and the journal keeps it for
// good).
func TestDepositDatesAreUsedOrRefused(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.refused(t, exitUsage, "before 1970-01-01", "deposit", "chem", "5", "--start", "0001-01-01")
	b.refused(t, exitUsage, "before 1970-01-01", "deposit", "chem", "5", "--end", "0001-01-01")
	b.refused(t, exitUsage, "before 1970-01-01", "deposit", "chem", "5", "--start", "1900-06-01T00:00:00Z")
	b.refused(t, exitUsage, "has already ended", "deposit", "chem", "5", "--end", "2020-12-31")
	b.refused(t, exitUsage, "has already ended", "deposit", "chem", "5", "--start", "now-2d", "--end", "now-1d")
	var r struct {
		Allocations []ledger.Allocation `json:"allocations"`
	}
	b.json(&r, "deposit", "chem", "5", "--start", "1999-01-01T00:00:00Z")
	if got := r.Allocations[0].Start; !got.Equal(time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a start given as 1999-01-01 is stored as %s", got)
	}
	b.json(&r, "deposit", "chem", "5", "--end", "now+1s")
	time.Sleep(1100 * time.Millisecond)
	b.refused(t, exitUsage, fmt.Sprintf("allocation %d of chem has already ended", r.Allocations[0].ID),
		"deposit", "chem", "5", "--allocation", fmt.Sprint(r.Allocations[0].ID))
}

// TestNewProjectInHFSAccount: a project made in an account split by HFS
// without a quota is refused, saying how to give it one; made with one,
// the command shows what HFS gives it now, in every format; --quota none
// makes it without one on purpose, and shows its share of nothing.
func TestNewProjectInHFSAccount(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "1000")
	b.ok("project", "create", "chem.a", "--quota", "dynamic:0.5")
	b.refused(t, exitUsage, "a project without a quota gets none of its own", "project", "create", "chem.b")
	b.refused(t, exitUsage, "--quota shares:1", "project", "create", "chem.a.x", "-d", "a sub-project")

	out := b.ok("project", "create", "chem.b", "--quota", "shares:1")
	for _, want := range []string{"HFS split of chem: pool 1000.00", "chem.b  shares:1", "500.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("project create chem.b does not say %q:\n%s", want, out)
		}
	}
	var created struct {
		ledger.Node
		Share ledger.NodeShare `json:"share"`
	}
	b.json(&created, "project", "create", "chem.c", "--quota", "none")
	if created.Name != "chem.c" || created.Share.Name != "chem.c" || !created.Share.Quota.IsZero() {
		t.Errorf("project create chem.c --quota none --json: %+v", created)
	}
	if out := b.ok("project", "create", "chem.a.x", "--quota", "dynamic:1", "-P"); !strings.Contains(out, "\nchem.a.x|dynamic:1|no|none|0|500.00|") {
		t.Errorf("project create -P:\n%s", out)
	}
	// No HFS in an account: no share printed, no quota needed.
	b.ok("account", "create", "bio")
	if out := b.ok("project", "create", "bio.lab1"); strings.Contains(out, "HFS") {
		t.Errorf("a project of an account without HFS shows a split:\n%s", out)
	}
}

// TestReactivate: a deactivated account or project is reactivated, journaled
// like its deactivation; a project inside a deactivated account waits for
// the account; bad names and unknown nodes are refused and write nothing.
func TestReactivate(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("project", "deactivate", "chem.lab1")
	b.refused(t, exitRefused, "deactivated", "user", "add", "amy", "--member", "chem.lab1")
	if out := b.ok("project", "reactivate", "chem.lab1"); !strings.Contains(out, "Active         yes") {
		t.Errorf("project reactivate:\n%s", out)
	}
	b.ok("user", "add", "amy", "--member", "chem.lab1")
	b.ok("project", "deactivate", "chem.lab1")
	b.ok("account", "deactivate", "chem")
	b.refused(t, exitRefused, `parent: ledger: inactive: node "chem" is deactivated (reactivate it first)`, "project", "reactivate", "chem.lab1")
	b.refused(t, exitRefused, "deactivated", "deposit", "chem", "5")
	b.ok("account", "reactivate", "chem")
	b.ok("deposit", "chem", "5")
	b.refused(t, exitRefused, "deactivated", "user", "modify", "amy", "--member", "chem.lab1")
	b.ok("project", "reactivate", "chem.lab1")
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"project", "reactivate", "chem.nope"}, exitNotFound, `no node named "chem.nope"`},
		{[]string{"account", "reactivate", "chem.lab1"}, exitUsage, "is a project name"},
		{[]string{"project", "reactivate", "chem"}, exitUsage, "is an account name"},
		{[]string{"account", "reactivate", "Chem!"}, exitUsage, "lowercase letters"},
		{[]string{"account", "reactivate"}, exitUsage, "takes 1 argument(s)"},
	} {
		b.refused(t, tc.code, tc.says, tc.args...)
	}
	var es []ledger.Entry
	b.json(&es, "journal", "--kind", "node_reactivate")
	if len(es) != 3 || es[1].Node != "chem" {
		t.Errorf("reactivations in the journal: %+v", es)
	}
}

// TestManagerAddsAndRemovesMembers: a manager of chem adds and removes
// members of chem's projects through the server, and moves a member's
// default project within chem; it is refused (403, exit 4, nothing
// written) members of bio's projects, and a user's description and active
// state, which every account shares.
func TestManagerAddsAndRemovesMembers(t *testing.T) {
	s := newRemoteRoles(t)
	mgr := s.as("chemmgr")
	mgr.ok("user", "modify", "bob", "--member", "chem.lab1")
	mgr.ok("user", "modify", "bob", "--manager", "chem")
	var users []ledger.User
	mgr.json(&users, "user", "list")
	if i := slices.IndexFunc(users, func(u ledger.User) bool { return u.Name == "bob" }); i < 0 || users[i].RoleIn("chem.lab1") != ledger.RoleMember || users[i].RoleIn("chem") != ledger.RoleManager {
		t.Errorf("bob after the manager's changes: %+v", users)
	}
	mgr.ok("user", "modify", "bob", "--remove", "chem.lab1", "--remove", "chem")
	// amy's default project is chem.lab1: her manager moves it as it
	// removes her.
	mgr.ok("user", "modify", "amy", "--remove", "chem.lab1", "--default-project", "")
	mgr.ok("user", "modify", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	for _, tc := range []struct {
		says string
		args []string
	}{
		{"client chemmgr (manager of chem) may not add user amy to bio.lab1: outside the subtrees it manages", []string{"user", "modify", "amy", "--member", "bio.lab1"}},
		{"may not remove user bob from bio.lab1: outside the subtrees it manages", []string{"user", "modify", "bob", "--remove", "bio.lab1"}},
		{"may not add user bob to bio: outside", []string{"user", "modify", "bob", "--manager", "bio"}},
		{"may not change user bob's default project, now bio.lab1: outside", []string{"user", "modify", "bob", "--default-project", ""}},
		{"may not make user amy's default project bio.lab1: outside", []string{"user", "modify", "amy", "--default-project", "bio.lab1"}},
		{"may not change the description or active state of user amy", []string{"user", "modify", "amy", "-d", "left"}},
		{"may not change the description or active state of user amy", []string{"user", "modify", "amy", "--active=false"}},
		{"may not POST /v1/users", []string{"user", "add", "carl", "--member", "chem.lab1"}},
	} {
		s.refused(t, mgr, exitRefused, tc.says, tc.args...)
	}
	// A manager's bad input is the ledger's to refuse, as an admin's is.
	s.refused(t, mgr, exitNotFound, `no user named "carl"`, "user", "modify", "carl", "--member", "chem.lab1")
	s.refused(t, mgr, exitNotFound, `no node named "chem.nope"`, "user", "modify", "amy", "--member", "chem.nope")
	s.refused(t, mgr, exitNotFound, `user amy is not a member of "chem.lab2"`, "user", "modify", "amy", "--remove", "chem.lab2")
	s.refused(t, mgr, exitUsage, "default project chem.lab1: user amy is not a member", "user", "modify", "amy", "--remove", "chem.lab1")
	s.ok("audit")
}
