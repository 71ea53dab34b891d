package main

import (
	"strings"
	"testing"
	"time"
)

// TestBalanceWarnings: `ingot balance` warns on standard error of an
// allocation that ends within 30 days and of credits used up, and carries
// the same warnings in --json; the table on standard output is unchanged.
func TestBalanceWarnings(t *testing.T) {
	b := newCLIBank(t)
	end := time.Now().AddDate(0, 0, 20).Format("2006-01-02")
	for _, args := range [][]string{
		{"account", "create", "chem"}, {"project", "create", "chem.lab1"}, {"deposit", "chem", "1000", "--end", end},
		{"account", "create", "bio"}, {"project", "create", "bio.lab1"}, {"deposit", "bio", "10"}, {"withdraw", "bio", "10"},
		{"account", "create", "phys"}, {"deposit", "phys", "10"},
	} {
		b.ok(args...)
	}
	out, errOut, code := b.runSplit("balance", "chem.lab1", "bio", "phys")
	if code != exitOK || strings.Contains(out, "warning") {
		t.Fatalf("balance: %d\n%s", code, out)
	}
	for _, want := range []string{"warning: chem.lab1: allocation 1 of chem ends in 19 days", "warning: bio: bio is exhausted"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("balance's warnings do not say %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "phys") {
		t.Errorf("phys is warned of:\n%s", errOut)
	}
	var nbs []struct {
		Node     string `json:"node"`
		Warnings []struct {
			Kind string `json:"kind"`
		} `json:"warnings"`
	}
	b.json(&nbs, "balance", "chem.lab1", "bio", "phys")
	if len(nbs) != 3 || len(nbs[0].Warnings) != 1 || nbs[0].Warnings[0].Kind != "ending" ||
		len(nbs[1].Warnings) != 1 || nbs[1].Warnings[0].Kind != "exhausted" || len(nbs[2].Warnings) != 0 {
		t.Errorf("balance --json: %+v", nbs)
	}
	if _, errOut, _ := b.runSplit("balance", "bio", "--at", time.Now().Format("2006-01-02T15:04:05")); errOut != "" {
		t.Errorf("balance --at warns: %s", errOut)
	}
}

// TestBalanceForecastWarns: `ingot balance --forecast` warns on standard
// error when at a recent pace the credits run out before the allocations
// end; plain balance, one request, does not read the forecast.
func TestBalanceForecastWarns(t *testing.T) {
	b := newCLIBank(t)
	for _, args := range [][]string{
		{"account", "create", "chem"}, {"project", "create", "chem.lab1"}, {"user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1"},
		{"machine", "add", "hpc1", "--cores", "32"}, {"deposit", "chem", "100000", "--end", time.Now().AddDate(0, 0, 300).Format("2006-01-02")},
		{"charge", "J1", "--user", "amy", "--procs", "8", "--wallclock-used", "1h"},
	} {
		b.ok(args...)
	}
	out, errOut, code := b.runSplit("balance", "chem.lab1", "--forecast")
	if code != exitOK || !strings.Contains(errOut, "warning: chem.lab1: at the pace of the last 7 days, chem.lab1's credits run out on ") || strings.Contains(out, "warning") {
		t.Errorf("balance --forecast: %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, _ := b.runSplit("balance", "chem.lab1"); errOut != "" {
		t.Errorf("plain balance warns: %s", errOut)
	}
}
