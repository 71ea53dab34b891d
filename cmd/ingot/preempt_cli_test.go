package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// newLSFBank is LSF's example with credits for tokens, made with the CLI:
// account lsf of 4 credits; lsf → {a, p4}, a → {b, p3}, b → {p1, p2}; p1
// owns 2, p3 1 (so b owns 2, a 3); every project accepts surplus (what an
// owner leaves is lent); limits b 2 and a 3 when limited. Then the jobs:
// inUse[k] liens of 1 credit on project p(k+1), named pK-N, so that the
// pool is held wholly by liens.
func newLSFBank(t *testing.T, inUse [4]int, limited bool, order string) *cliBank {
	b := newCLIBank(t)
	b.ok("machine", "add", "hpc1", "--cores", "32")
	b.ok("account", "create", "lsf", "--preemption", order)
	b.ok("user", "add", "amy", "--member", "lsf")
	b.ok("deposit", "lsf", "4")
	for _, p := range []struct{ name, owns string }{{"a", ""}, {"a.b", ""}, {"a.b.p1", "2"}, {"a.b.p2", ""}, {"a.p3", "1"}, {"p4", ""}} {
		flags := []string{"project", "create", "lsf." + p.name, "--accept-surplus"}
		if p.owns != "" {
			flags = append(flags, "--ownership", p.owns)
		} else {
			flags = append(flags, "--quota", "none")
		}
		b.ok(flags...)
	}
	if limited {
		b.ok("project", "policy", "lsf.a.b", "--limit", "2")
		b.ok("project", "policy", "lsf.a", "--limit", "3")
	}
	for k, n := range inUse {
		for j := range n {
			b.ok(place(fmt.Sprintf("p%d-%d", k+1, j+1), lsfProject(k+1), 1)...)
		}
	}
	return b
}

// lsfProject is the full name of project pK.
func lsfProject(k int) string {
	return map[int]string{1: "lsf.a.b.p1", 2: "lsf.a.b.p2", 3: "lsf.a.p3", 4: "lsf.p4"}[k]
}

// TestPreemptLSFExamples runs LSF's six examples through the CLI on a real
// bank: `preempt` names the job to release, the lien is refused naming
// it, and once it is released the lien goes through; or, where LSF
// preempts nothing, neither does the bank.
func TestPreemptLSFExamples(t *testing.T) {
	for _, c := range []struct {
		name    string
		inUse   [4]int
		limited bool
		order   string
		asks    int    // the project asking for 1 credit
		victim  string // the project of the one job to preempt; "" for none
	}{
		{"top-down: p1 preempts p4, not p2", [4]int{0, 2, 0, 2}, false, "top-down", 1, "lsf.p4"},
		{"top-down: p2 preempts p4 (a's ownership is unmet)", [4]int{2, 0, 0, 2}, false, "top-down", 2, "lsf.p4"},
		{"limits: p1 preempts only p2", [4]int{0, 2, 0, 2}, true, "top-down", 1, "lsf.a.b.p2"},
		{"limits: p2 cannot preempt", [4]int{2, 0, 0, 2}, true, "top-down", 2, ""},
		{"bottom-up: p1 preempts p2 (its own subtree first)", [4]int{0, 2, 0, 2}, false, "bottom-up", 1, "lsf.a.b.p2"},
		{"bottom-up: p2 preempts p4 (a's ownership is unmet)", [4]int{2, 0, 0, 2}, false, "bottom-up", 2, "lsf.p4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newLSFBank(t, c.inUse, c.limited, c.order)
			project := lsfProject(c.asks)
			var p ledger.Preemption
			b.json(&p, "preempt", project, "1", "--machine", "hpc1")
			lien := place("asks", project, 1)
			if c.victim == "" {
				if p.Outcome != "no_victims" || len(p.Victims) != 0 {
					t.Fatalf("preempt: %s %+v, want no victims", p.Outcome, p.Victims)
				}
				b.refused(t, exitRefused, "lsf.a is underfed by 1, but no running job of an overfed project may be taken for it", lien...)
				return
			}
			if p.Outcome != "preempt" || p.Order != c.order || len(p.Victims) != 1 || p.Victims[0].Project != c.victim {
				t.Fatalf("preempt: %s (%s) %+v, want one job of %s", p.Outcome, p.Order, p.Victims, c.victim)
			}
			victim := p.Victims[0]
			b.refused(t, exitRefused, fmt.Sprintf("preempt 1 job (%s) to free 1: job %s on hpc1 (%s, holds 1)", c.order, victim.JobID, c.victim), lien...)
			b.ok("lien", "release", victim.JobID)
			b.ok(lien...)
			_, shares := sharesOf(b, "lsf")
			if got := shares[project].InUse; !got.Equal(dec(t, "1").Add(dec(t, fmt.Sprint(c.inUse[c.asks-1])))) {
				t.Errorf("%s in use %s after the lien", project, got)
			}
		})
	}
}

// TestPreemptPolicyRefused: a policy HFS cannot hold is refused with a
// clear message and nothing written (and so is a preemption asked for an
// amount that is not one).
func TestPreemptPolicyRefused(t *testing.T) {
	b := newLSFBank(t, [4]int{}, false, "top-down")
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"ownership on a project with sub-projects", []string{"project", "policy", "lsf.a.b", "--ownership", "1"},
			"policy of lsf.a.b: ownership is set on projects without sub-projects, and lsf.a.b has lsf.a.b.p1"},
		{"a project under one that owns", []string{"project", "create", "lsf.a.b.p1.x", "--quota", "none"},
			"create lsf.a.b.p1.x: lsf.a.b.p1 owns 2 credits, and ownership is for projects without sub-projects"},
		{"negative ownership", []string{"project", "policy", "lsf.p4", "--ownership", "-1"}, `--ownership "-1" is not a plain decimal number`},
		{"negative group non-shared", []string{"project", "policy", "lsf.a", "--group-non-shared", "-2"}, `--group-non-shared "-2" is not a plain decimal number`},
		{"priority above the range", []string{"project", "policy", "lsf.p4", "--priority", "1001"}, "policy of lsf.p4: priority 1001 is outside 0..1000"},
		{"negative priority", []string{"project", "policy", "lsf.p4", "--priority", "-1"}, "policy of lsf.p4: priority -1 is outside 0..1000"},
		{"ownership above a limit", []string{"project", "policy", "lsf.a", "--limit", "2"}, "the ownership in lsf.a adds up to 3, above its limit 2"},
		{"unknown preemption order", []string{"account", "modify", "lsf", "--preemption", "sideways"}, "unknown preemption order \"sideways\" (top-down or bottom-up)"},
		{"preempt for an amount that is not one", []string{"preempt", "lsf.a.b.p1", "1e3"}, "preempt: ledger: invalid input: amount \"1e3\" is not a plain decimal number"},
	} {
		t.Run(c.name, func(t *testing.T) { b.refused(t, exitUsage, c.says, c.args...) })
	}
	if out := b.ok("project", "show", "lsf.a.b.p1"); !strings.Contains(out, "Ownership      2\n") || strings.Contains(out, "Priority") {
		t.Errorf("project show after the refusals:\n%s", out)
	}
}

// TestCondoWalkthrough is the README's condo: two owners and a general
// pool, the pool filled with the general pool's jobs, an owner's lien
// refused naming the job to preempt, released, and the lien through;
// `hfs show` at each step prints what the README shows.
func TestCondoWalkthrough(t *testing.T) {
	b := newCLIBank(t)
	b.ok("machine", "add", "hpc1", "--cores", "32")
	b.ok("account", "create", "condo")
	b.ok("deposit", "condo", "1000")
	b.ok("project", "create", "condo.chem", "--ownership", "400")
	b.ok("project", "create", "condo.phys", "--ownership", "300")
	b.ok("project", "create", "condo.general", "--quota", "shares:1", "--accept-surplus")
	b.ok("user", "add", "gina", "--member", "condo.general")
	b.ok("user", "add", "carl", "--member", "condo.chem")
	wantLines := func(out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l+"\n") {
				t.Errorf("missing line %q in:\n%s", l, out)
			}
		}
	}
	wantLines(b.ok("hfs", "show", "condo"),
		"HFS split of condo: pool 1000.00, leftover 1000.00",
		"  condo.chem     none         no             none   0          400        0               0         400.00  0.00       0.00  0.00      400.00     400.00   400.00  0.00   under 400.00",
		"  condo.general  shares:1     yes            none   0          0          0               0         300.00  0.00       0.00  0.00      1000.00    1000.00  0.00    0.00   -")
	j := []string{"--procs", "1", "--start", futureMonday}
	for _, g := range []struct {
		job     string
		credits string
	}{{"g1", "100"}, {"g2", "100"}, {"g3", "300"}, {"g4", "100"}, {"g5", "400"}} {
		b.ok(append([]string{"lien", "place", g.job, "--user", "gina", "--project", "condo.general", "--wallclock", g.credits}, j...)...)
	}
	wantLines(b.ok("hfs", "show", "condo"),
		"preemption top-down; ranked highest condo.chem (preempted last), lowest condo.general (first)",
		"  condo.chem     none         no             none   0          400        0               0         400.00  0.00       0.00  0.00      0.00       400.00  400.00  0.00     under 400.00",
		"  condo.general  shares:1     yes            none   0          0          0               0         300.00  1000.00    0.00  1000.00   0.00       0.00    0.00    1000.00  over 1000.00")
	owner := append([]string{"lien", "place", "c1", "--user", "carl", "--project", "condo.chem", "--wallclock", "250"}, j...)
	b.refused(t, exitRefused, "ingot: lien for job c1: ledger: insufficient funds: project condo.chem needs 250, 0 available; "+
		"condo.chem is underfed by 400: preempt 1 job (top-down) to free 400: job g5 on hpc1 (condo.general, holds 400)\n", owner...)
	wantLines(b.ok("preempt", "condo.chem", "250", "--machine", "hpc1"),
		"condo.chem is underfed by 400: preempt 1 job (top-down) to free 400: job g5 on hpc1 (condo.general, holds 400)",
		"hpc1     g5   condo.general  gina  400.00")
	b.ok("lien", "release", "g5")
	b.ok(owner...)
	wantLines(b.ok("hfs", "show", "condo"),
		"HFS split of condo: pool 1000.00, leftover 150.00",
		"  condo.chem     none         no             none   0          400        0               0         400.00  250.00     0.00  250.00    150.00     150.00  400.00  250.00  under 150.00",
		"  condo.general  shares:1     yes            none   0          0          0               0         300.00  600.00     0.00  600.00    150.00     150.00  0.00    600.00  over 600.00")
}

// TestShortfallWarned: ownership adding up above the pool is allowed,
// with a warning from `project policy` and `hfs show`, and shown as what
// each owner gets.
func TestShortfallWarned(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "condo")
	b.ok("deposit", "condo", "100")
	b.ok("project", "create", "condo.a", "--ownership", "80")
	b.ok("project", "create", "condo.g", "--quota", "none", "--group-non-shared", "40")
	b.ok("project", "create", "condo.g.x", "--ownership", "40")
	out := b.ok("project", "policy", "condo.a", "--priority", "2")
	warning := "ingot: warning: ownership and group non-shared set in condo add up to 160; the pool (100) and the limits cover 100: " +
		"short condo.a 66.67 of 80, condo.g 33.33 of 40, condo.g.x 0 of 40\n"
	if !strings.Contains(out, warning) {
		t.Errorf("project policy:\n%s", out)
	}
	out = b.ok("hfs", "show", "condo")
	if !strings.Contains(out, warning) || !strings.Contains(out, "ranked highest condo.a (preempted last)") {
		t.Errorf("hfs show:\n%s", out)
	}
	// 160 set in a pool of 100, satisfied level by level from the top:
	// the first level's own claims, condo.a's 80 and condo.g's reserve of
	// 40, do not fit in 100 and share it, 100 × 80/120 and 100 × 40/120;
	// the level below, condo.g.x's 40, gets nothing.
	_, shares := sharesOf(b, "condo")
	for name, want := range map[string]string{"condo.a": "66.67", "condo.g": "33.33", "condo.g.x": "0"} {
		if got := shares[name].Owned.Add(shares[name].Reserve); !got.Equal(dec(t, want)) {
			t.Errorf("%s owns and reserves %s, want %s", name, got, want)
		}
	}
}

// TestNonSharedFirstCLI is LSF's own example of non-shared configured on
// two levels, 6 of 4 tokens (hfs/testdata/lsf-nonshared-first.json):
// License Scheduler satisfies the non-shared configuration first, from the
// top, so the top-level groups get their 2 each and the projects below are
// left short and warned of by name; a project's non_shared may be above
// the quota the carve leaves it (it then holds at most that quota), up to
// the quota it would have were nothing owned or reserved.
func TestNonSharedFirstCLI(t *testing.T) {
	b := newCLIBank(t)
	var printed struct {
		hfsOutput
		Warnings []string `json:"warnings"`
	}
	out := b.ok("hfs", "compute", filepath.Join("..", "..", "hfs", "testdata", "lsf-nonshared-first.json"))
	if err := json.Unmarshal([]byte(out), &printed); err != nil {
		t.Fatalf("hfs compute: %v\n%s", err, out)
	}
	exact := new(big.Rat)
	wantNumbers(t, "quota", map[string]string{"final": "0", "G2": "2", "G1": "2", "AP2": "0", "AP1": "0"}, printed.Quota, exact)
	wantNumbers(t, "allocated", map[string]string{"G2": "2", "G1": "0", "AP2": "1", "AP1": "1"}, printed.Allocated, exact)
	if len(printed.Warnings) != 1 || !strings.HasSuffix(printed.Warnings[0], "short AP2 0 of 1, AP1 0 of 1") {
		t.Errorf("hfs compute warnings: %q", printed.Warnings)
	}

	// The same in a bank (G2 is lsf.g2, and so on), the groups' NON_SHARED
	// as group non-shared and the projects' as non_shared, as the example
	// writes it.
	b.ok("account", "create", "lsf")
	b.ok("deposit", "lsf", "4")
	b.ok("project", "create", "lsf.g2", "--quota", "shares:1", "--group-non-shared", "2")
	b.ok("project", "create", "lsf.g1", "--quota", "shares:1", "--group-non-shared", "2")
	b.ok("project", "create", "lsf.g1.ap2", "--quota", "shares:1", "--non-shared", "1", "--accept-surplus")
	b.ok("project", "create", "lsf.g1.ap1", "--quota", "shares:1", "--non-shared", "1", "--accept-surplus")
	warning := "ingot: warning: non_shared set in lsf is above the own quota, which bounds what it holds: short lsf.g1.ap1 0 of 1, lsf.g1.ap2 0 of 1\n"
	if out := b.ok("hfs", "show", "lsf"); !strings.Contains(out, warning) {
		t.Errorf("hfs show:\n%s", out)
	}
	_, shares := sharesOf(b, "lsf")
	for name, want := range map[string][2]string{"lsf.g2": {"2", "2"}, "lsf.g1": {"2", "2"}, "lsf.g1.ap2": {"0", "0"}, "lsf.g1.ap1": {"0", "0"}} {
		if n := shares[name]; !n.Reserve.Equal(dec(t, want[0])) || !n.Quota.Equal(dec(t, want[1])) {
			t.Errorf("%s: reserve %s, quota %s; want %s, %s", name, n.Reserve, n.Quota, want[0], want[1])
		}
	}
	// A project still may not hold more than its quota could ever be: G1's
	// 2 split by shares give AP1 1.
	b.refused(t, exitUsage, "non_shared 1.5 is above its quota, 0 with the account's pool now", "project", "policy", "lsf.g1.ap1", "--non-shared", "1.5")
	// Nor a group above its own quota (its reserve of 2): what it keeps
	// for its subtree is its group non-shared.
	b.refused(t, exitUsage, "non_shared 3 is above its quota, 2 with the account's pool now", "project", "policy", "lsf.g1", "--non-shared", "3")

	// The projects' NON_SHARED as group non-shared: the carve, level by
	// level, gives the groups their 2 first (spread over every level, G2
	// would get 4/3) and the projects nothing.
	b.ok("project", "policy", "lsf.g1.ap2", "--non-shared", "0", "--group-non-shared", "1")
	out = b.ok("project", "policy", "lsf.g1.ap1", "--non-shared", "0", "--group-non-shared", "1")
	warning = "ingot: warning: ownership and group non-shared set in lsf add up to 6; the pool (4) and the limits cover 4: short lsf.g1.ap1 0 of 1, lsf.g1.ap2 0 of 1\n"
	if !strings.Contains(out, warning) {
		t.Errorf("project policy:\n%s", out)
	}
	_, shares = sharesOf(b, "lsf")
	for name, want := range map[string]string{"lsf.g2": "2", "lsf.g1": "2", "lsf.g1.ap2": "0", "lsf.g1.ap1": "0"} {
		if got := shares[name].Reserve; !got.Equal(dec(t, want)) {
			t.Errorf("%s reserves %s, want %s", name, got, want)
		}
	}
}
