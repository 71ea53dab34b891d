package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestBalanceListsTheNextUpcoming: balance --allocations lists the
// allocations active and the next ledger.UpcomingListed to start, saying
// on standard error that more start later; --all-allocations lists them
// all.
func TestBalanceListsTheNextUpcoming(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "100")
	for i := range ledger.UpcomingListed + 2 {
		b.ok("deposit", "chem", "1", "--start", fmt.Sprintf("now+%dd", ledger.UpcomingListed+2-i), "-d", fmt.Sprint("preset ", i))
	}
	rows := func(out string) int { return strings.Count(out, "\nchem ") }
	out, errOut, code := b.runSplit("balance", "chem", "--allocations")
	if code != exitOK || rows(out) != 1+ledger.UpcomingListed || strings.Contains(out, "preset 0") || strings.Contains(out, "preset 1\n") ||
		!strings.Contains(out, "preset 2") || errOut != fmt.Sprintf("chem: more allocations start later than the %d listed: --all-allocations lists them\n", ledger.UpcomingListed) {
		t.Errorf("balance --allocations: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = b.runSplit("balance", "chem", "--all-allocations")
	if code != exitOK || rows(out) != 3+ledger.UpcomingListed || errOut != "" {
		t.Errorf("balance --all-allocations: exit %d\n%s%s", code, out, errOut)
	}
	var nbs []ledger.NodeBalance
	b.json(&nbs, "balance", "chem")
	if len(nbs) != 1 || len(nbs[0].Allocations) != 1+ledger.UpcomingListed || !nbs[0].UpcomingLeftOut || !nbs[0].Amount.Equal(dec(t, "100")) {
		t.Errorf("balance --json: %+v", nbs)
	}
	var all []ledger.NodeBalance
	b.json(&all, "balance", "--all-allocations")
	if len(all) != 1 || len(all[0].Allocations) != 3+ledger.UpcomingListed || all[0].UpcomingLeftOut {
		t.Errorf("balance --all-allocations --json: %+v", all)
	}
}
