package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/clients"
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

// onTerminal makes the command line believe a person types answer on a
// terminal, for the rest of the test.
func onTerminal(t *testing.T, answer string) {
	saved := console
	console = func() (io.Reader, bool) { return strings.NewReader(answer), true }
	t.Cleanup(func() { console = saved })
}

// TestDestructiveCommandsAsk: on a terminal, each destructive command asks
// and does nothing (exit 4) without a y or yes; --yes, or standard input
// that is not a terminal (a script), asks nothing.
func TestDestructiveCommandsAsk(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("user", "add", "amy", "--member", "chem.lab1")
	b.ok("machine", "add", "hpc1")
	b.ok("rate", "add", "NBM", "QualityOfService=premium", "2")
	b.ok("rate", "window", "add", "night", "--start", "20:00", "--end", "06:00", "--multiplier", "0.5")
	b.ok("policy", "set", "DEBITALLCPU", "--machine", "hpc1")
	b.ok("policy", "fallback", "chem", "--project", "chem.lab1")
	keys := t.TempDir()
	b.ok("client", "add", "slurm", "--role", "scheduler", "--scope", "hpc1", "--key-out", filepath.Join(keys, "slurm.key"))
	var list []clients.Client
	b.json(&list, "client", "list")
	table := filepath.Join(keys, "rates.json")
	if err := os.WriteFile(table, []byte(b.ok("rate", "list", "--json")), 0o600); err != nil {
		t.Fatal(err)
	}
	destructive := []struct {
		args []string
		asks string
	}{
		{[]string{"user", "modify", "amy", "--active=false"}, "deactivate user amy?"},
		{[]string{"machine", "modify", "hpc1", "--active=false"}, "deactivate machine hpc1?"},
		{[]string{"client", "revoke", "slurm", list[0].Keys[0].ID}, "revoke key " + list[0].Keys[0].ID + " of client slurm?"},
		{[]string{"rate", "delete", "NBM", "QualityOfService=premium"}, "delete rate NBM QualityOfService=premium?"},
		{[]string{"rate", "window", "delete", "night"}, "delete window night?"},
		{[]string{"rate", "set", table}, "replace the whole rate table with " + table + "?"},
		{[]string{"policy", "set", "none", "--machine", "hpc1"}, "remove the charge policy of machine hpc1?"},
		{[]string{"policy", "fallback", "none", "--project", "chem.lab1"}, "remove the fallback of project chem.lab1?"},
		{[]string{"project", "deactivate", "chem.lab1"}, "deactivate project chem.lab1 and everything under it?"},
		{[]string{"account", "deactivate", "chem"}, "deactivate account chem and everything under it?"},
	}
	for _, answer := range []string{"n\n", "\n", "", "no\n", "yy\n"} {
		onTerminal(t, answer)
		for _, d := range destructive {
			b.refused(t, exitRefused, "not confirmed: nothing changed", d.args...)
			if out, _ := b.run(d.args...); !strings.Contains(out, d.asks+" ") || !strings.Contains(out, "[y/N]") {
				t.Errorf("ingot %s on a terminal asks:\n%s", strings.Join(d.args, " "), out)
			}
		}
	}
	for i, d := range destructive {
		answer := []string{"y\n", "yes\n", "Y\n", " YES \n", "y"}[i%5]
		onTerminal(t, answer)
		if out := b.ok(d.args...); !strings.Contains(out, "[y/N]") {
			t.Errorf("ingot %s: answered %q:\n%s", strings.Join(d.args, " "), answer, out)
		}
	}
	// --yes, or no terminal: nothing asked.
	b.ok("user", "modify", "amy", "--active")
	onTerminal(t, "")
	if out := b.ok("user", "modify", "amy", "--active=false", "--yes"); strings.Contains(out, "[y/N]") {
		t.Errorf("--yes asked:\n%s", out)
	}
	console = func() (io.Reader, bool) { return strings.NewReader(""), false }
	b.ok("user", "modify", "amy", "--active")
	if out := b.ok("user", "modify", "amy", "--active=false"); strings.Contains(out, "[y/N]") {
		t.Errorf("no terminal, but asked:\n%s", out)
	}
	// What is not destructive does not ask.
	onTerminal(t, "")
	b.ok("account", "reactivate", "chem")
	b.ok("user", "modify", "amy", "--active")
	b.ok("deposit", "chem", "10")
	b.ok("withdraw", "chem", "5")
}

// TestDestructiveCommandsAskThroughTheServer: the command line asks before
// it sends the request.
func TestDestructiveCommandsAskThroughTheServer(t *testing.T) {
	s := newRemoteRoles(t)
	mgr := s.as("chemmgr")
	onTerminal(t, "n\n")
	s.refused(t, mgr, exitRefused, "not confirmed", "project", "deactivate", "chem.lab1")
	onTerminal(t, "y\n")
	mgr.ok("project", "deactivate", "chem.lab1")
}

// TestStdinIsTerminal: /dev/null is a character device, as a terminal is,
// and is what cron, systemd and go test give a command: it is not one. Nor
// is a pipe or a file.
func TestStdinIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "answer"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	defer func(saved *os.File) { os.Stdin = saved }(os.Stdin)
	for _, f := range []*os.File{null, r, file} {
		os.Stdin = f
		if stdinIsTerminal() {
			t.Errorf("%s is taken for a terminal", f.Name())
		}
	}
}

// TestProjectOfAManagerBelowItsAccount: a manager whose scope is a project
// makes a sub-project in an account split by HFS; it does not read the
// account's split, so the project is made and a note says its share is not
// shown. Without a quota it is refused through the server too.
func TestProjectOfAManagerBelowItsAccount(t *testing.T) {
	s := newRemoteRoles(t)
	s.ok("project", "policy", "chem.lab1", "--quota", "dynamic:1")
	lab := s.addClient("labmgr", "manager", "chem.lab1")
	out := lab.ok("project", "create", "chem.lab1.x", "--quota", "shares:1")
	if !strings.Contains(out, "note: chem.lab1.x is made; its HFS share is not shown: client labmgr (manager of chem.lab1) may not read chem") ||
		!strings.Contains(out, "Name           chem.lab1.x") {
		t.Errorf("project create by a manager of chem.lab1:\n%s", out)
	}
	s.refused(t, lab, exitUsage, "a project without a quota gets none of its own", "project", "create", "chem.lab1.y")
	lab.ok("project", "create", "chem.lab1.y", "--quota", "none")
}
