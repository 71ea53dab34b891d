package main

import (
	"strings"
	"testing"
	"time"
)

// TestScheduleRun: a monthly schedule that started three months ago makes
// its three periods at the first run, with the carry-over between them,
// and nothing at the second; the rest is upcoming; a cancelled schedule
// makes nothing more.
func TestScheduleRun(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	start := time.Now().UTC().AddDate(0, -3, 0).Add(time.Hour).Format(time.RFC3339)
	b.ok("allocation", "schedule", "chem", "1000", "--every", "month", "--start", start, "--count", "6", "--carry-over", "50:300")
	out := b.ok("allocation", "schedule", "run", "-P")
	if n := strings.Count(out, "\n1|chem|"); n != 3 {
		t.Fatalf("first run made %d periods:\n%s", n, out)
	}
	if out := b.ok("allocation", "schedule", "run", "-P"); strings.Contains(out, "|chem|") {
		t.Errorf("second run made periods again:\n%s", out)
	}
	// 1000 a period, nothing spent: 300 (the cap) carried twice.
	if out := b.ok("balance", "chem", "-P"); !strings.Contains(out, "\nchem|1300.00|") {
		t.Errorf("balance after three periods:\n%s", out)
	}
	if out := b.ok("statement", "chem", "-s", "-P", "--start", "2000-01-01"); !strings.Contains(out, "transfer|2|600.00") || !strings.Contains(out, "deposit|3|3000.00") {
		t.Errorf("statement does not show the deposits and carry-overs:\n%s", out)
	}
	if out := b.ok("balance", "--upcoming", "-P"); strings.Count(out, "\nchem|1|") != 3 {
		t.Errorf("upcoming:\n%s", out)
	}
	b.ok("allocation", "schedule", "cancel", "1")
	if out := b.ok("balance", "--upcoming", "-P"); strings.Contains(out, "\nchem|") {
		t.Errorf("a cancelled schedule is upcoming:\n%s", out)
	}
	b.refused(t, exitUsage, "not both", "allocation", "schedule", "chem", "1", "--every", "month", "--count", "2", "--until", "2030-01-01")
	b.refused(t, exitUsage, "month, quarter or year", "allocation", "schedule", "chem", "1", "--every", "week")
	b.refused(t, exitUsage, "carry-over", "allocation", "schedule", "chem", "1", "--every", "month", "--carry-over", "150")
	b.ok("audit")
}
