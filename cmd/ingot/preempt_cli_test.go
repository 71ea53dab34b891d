package main

import (
	"fmt"
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
// clear message and nothing written.
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
		{"negative ownership", []string{"project", "policy", "lsf.p4", "--ownership", "-1"}, "policy of lsf.p4: ownership -1 is negative"},
		{"negative group non-shared", []string{"project", "policy", "lsf.a", "--group-non-shared", "-2"}, "policy of lsf.a: group_non_shared -2 is negative"},
		{"priority above the range", []string{"project", "policy", "lsf.p4", "--priority", "1001"}, "policy of lsf.p4: priority 1001 is outside 0..1000"},
		{"negative priority", []string{"project", "policy", "lsf.p4", "--priority", "-1"}, "policy of lsf.p4: priority -1 is outside 0..1000"},
		{"ownership above a limit", []string{"project", "policy", "lsf.a", "--limit", "2"}, "the ownership in lsf.a adds up to 3, above its limit 2"},
		{"unknown preemption order", []string{"account", "modify", "lsf", "--preemption", "sideways"}, "unknown preemption order \"sideways\" (top-down or bottom-up)"},
	} {
		t.Run(c.name, func(t *testing.T) { b.refused(t, exitUsage, c.says, c.args...) })
	}
	if out := b.ok("project", "show", "lsf.a.b.p1"); !strings.Contains(out, "Ownership      2\n") || strings.Contains(out, "Priority") {
		t.Errorf("project show after the refusals:\n%s", out)
	}
}
