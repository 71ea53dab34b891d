package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/lien"
)

// runSplit runs a command and returns its standard output and standard
// error apart, and its exit code.
func (b *cliBank) runSplit(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(append(append([]string{"ingot"}, b.global...), args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// flushJSON runs a reservation flush with --json and returns its answer
// and what it said on standard error.
func flushJSON(t *testing.T, b *cliBank, args ...string) (lien.FlushResult, string) {
	t.Helper()
	out, errOut, code := b.runSplit(append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("ingot %s --json exited %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	var r lien.FlushResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("ingot %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return r, errOut
}

// TestReservationFlushDryRun checks `reservation flush --dry-run` on a
// bank file and through a server: it prints what a flush would charge and
// from where, and changes nothing; then the flush charges just that. A
// flush the account cannot cover, credit limit included, is charged all
// the same (the reservation was held), with a warning on standard error
// and in the JSON, before (dry run) and after; one it covers has none.
// There was no dry run, and an overdraft said nothing.
func TestReservationFlushDryRun(t *testing.T) {
	for _, where := range []string{"file", "server"} {
		t.Run(where, func(t *testing.T) {
			var b *cliBank
			if where == "file" {
				b = newCLIBank(t)
			} else {
				b = newRemoteSite(t).cliBank
			}
			b.ok("account", "create", "chem")
			b.ok("project", "create", "chem.lab1")
			b.ok("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
			b.ok("machine", "add", "hpc1", "--cores", "32")
			b.ok("deposit", "chem", "1000", "--credit-limit", "100") // allocation 1: 1100 to spend
			// Ended reservations: a flush charges them to their end, whatever the clock.
			b.ok("reservation", "add", "small", "--procs", "1", "--start", "2026-01-05T10:00:00Z", "--end", "2026-01-05T10:05:00Z", "--user", "amy")
			b.ok("reservation", "add", "maint", "--procs", "16", "--start", "2026-01-05T10:00:00Z", "--end", "2026-01-05T12:00:00Z", "--user", "amy")

			// Covered: 300 idle processor-seconds, 300.00 of 1100.00.
			r, warned := flushJSON(t, b, "reservation", "flush", "small", "--dry-run")
			if !r.DryRun || r.Charge == nil || r.Charge.Charge.Amount.String() != "300" || r.Warning != "" || warned != "" {
				t.Errorf("dry run of a covered flush: %+v, stderr %q; want 300 and no warning", r, warned)
			}
			r, warned = flushJSON(t, b, "reservation", "flush", "small")
			if r.DryRun || r.Charge == nil || r.Charge.Charge.Amount.String() != "300" || r.Warning != "" || warned != "" {
				t.Errorf("covered flush: %+v, stderr %q; want 300 and no warning", r, warned)
			}

			// Not covered: 16 × 7200 = 115200.00 against 700.00 left and a
			// credit limit of 100.00: 114400.00 beyond them.
			before := b.ok("balance", "chem")
			entries := b.entries()
			const wantWarning = "reservation maint: the idle charge of 115200.00 would overdraw chem past its credit limit: " +
				"114400.00 more than its allocations on hpc1 hold with their credit limits, debited from allocation 1"
			dry, warned := flushJSON(t, b, "reservation", "flush", "maint", "--dry-run")
			if !dry.DryRun || dry.IdleSeconds != 115200 || dry.Charge == nil || dry.Charge.Charge.Amount.String() != "115200" ||
				dry.Charge.Charge.Overdrawn.String() != "114400" || dry.Charge.Charge.ID != 0 {
				t.Errorf("dry run: idle %d, charge %+v; want 115200 idle, charged 115200, overdrawn 114400, no charge id", dry.IdleSeconds, dry.Charge)
			}
			if dry.Warning != wantWarning || warned != "ingot: warning: "+wantWarning+"\n" {
				t.Errorf("dry run's warning %q, stderr %q; want %q", dry.Warning, warned, wantWarning)
			}
			out, errOut, code := b.runSplit("reservation", "flush", "maint", "--dry-run")
			for _, says := range []string{"Dry run", "would be 115200.00", "115200.00 from allocation 1", "Overdrawn               114400.00"} {
				if code != exitOK || !strings.Contains(out, says) {
					t.Errorf("dry run, as a table, exit %d:\n%s\nwant %q in it", code, out, says)
				}
			}
			if !strings.Contains(errOut, "ingot: warning: "+wantWarning) {
				t.Errorf("dry run, as a table, said on stderr %q; want the warning", errOut)
			}
			if after := b.ok("balance", "chem"); after != before || b.entries() != entries {
				t.Errorf("the dry runs changed the bank: balance\n%s\nthen\n%s, %d journal entries then %d", before, after, entries, b.entries())
			}
			var rs []lien.Reservation
			b.json(&rs, "reservation", "list")
			for _, res := range rs {
				if res.Name == "maint" && (res.Flushes != 0 || !res.Charged.IsZero()) {
					t.Errorf("the dry runs recorded a flush: %+v", res)
				}
			}

			flushed, warned := flushJSON(t, b, "reservation", "flush", "maint")
			wantDone := strings.Replace(wantWarning, "would overdraw", "overdrew", 1)
			if flushed.DryRun || flushed.Warning != wantDone || warned != "ingot: warning: "+wantDone+"\n" {
				t.Errorf("flush: warning %q, stderr %q; want %q", flushed.Warning, warned, wantDone)
			}
			if flushed.Charge == nil || !flushed.Charge.Charge.Amount.Equal(dry.Charge.Charge.Amount) ||
				!flushed.Charge.Charge.Overdrawn.Equal(dry.Charge.Charge.Overdrawn) || len(flushed.Charge.Charge.Debits) != len(dry.Charge.Charge.Debits) ||
				flushed.Charge.Charge.Debits[0].Allocation != dry.Charge.Charge.Debits[0].Allocation ||
				!flushed.Charge.Charge.Debits[0].Amount.Equal(dry.Charge.Charge.Debits[0].Amount) || flushed.IdleSeconds != dry.IdleSeconds {
				t.Errorf("the flush charged %s (overdrawn %s, debits %v, idle %d); its dry run said %s (%s, %v, %d)",
					flushed.Charge.Charge.Amount, flushed.Charge.Charge.Overdrawn, flushed.Charge.Charge.Debits, flushed.IdleSeconds,
					dry.Charge.Charge.Amount, dry.Charge.Charge.Overdrawn, dry.Charge.Charge.Debits, dry.IdleSeconds)
			}
			if nb := balanceOf(b, "chem"); nb.Amount.String() != "-114500" {
				t.Errorf("chem's amount after the flushes %s, want 1000 − 300 − 115200 = -114500", nb.Amount)
			}
		})
	}
}
