package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOperatorMessages: the refusals an operator meets say what is wrong
// with what was typed, and --json answers errors in JSON on stdout.
func TestOperatorMessages(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		says    string
		notSays string
	}{
		{"too many places", []string{"deposit", "chem", "1.005"}, exitUsage, "amount 1.005 has more than 2 decimal places", "credit limit"},
		{"a credit limit with too many places", []string{"deposit", "chem", "1", "--credit-limit", "0.005"}, exitUsage, "--credit-limit: ledger: invalid input: amount 0.005", ""},
		{"above the maximum", []string{"deposit", "chem", "10000000000000000"}, exitUsage, "is above the maximum 1000000000000000", "not a plain"},
		{"-- before a negative amount", []string{"deposit", "chem", "--", "-5"}, exitUsage, `amount "-5" is not a plain decimal`, "argument"},
		{"backup into a directory", []string{"backup", dir}, exitUsage, "is a directory: give the copy's file name", "--force"},
		{"backup into a directory, forced", []string{"backup", dir, "--force"}, exitUsage, "is a directory", "rename"},
		{"a socket that is not there", []string{"--server", "unix:" + filepath.Join(dir, "none.sock"), "balance"}, exitUnavailable, "server unix:" + filepath.Join(dir, "none.sock"), "localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := b.run(tc.args...)
			if code != tc.code || !strings.Contains(out, tc.says) || (tc.notSays != "" && strings.Contains(out, tc.notSays)) {
				t.Errorf("ingot %s exited %d:\n%s\nwant exit %d saying %q, not %q", strings.Join(tc.args, " "), code, out, tc.code, tc.says, tc.notSays)
			}
		})
	}
	b.ok("deposit", "chem", "--", "5") // "--" and a positive amount
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused backups left %v", entries)
	}

	// --json: errors are JSON on stdout, with the code and the exit code,
	// wherever the flag stands and whatever the error.
	for _, tc := range []struct {
		args []string
		code string
		exit int
	}{
		{[]string{"deposit", "nope", "1", "--json"}, "not_found", exitNotFound},
		{[]string{"--json", "deposit", "chem", "1.005"}, "invalid", exitUsage},
		{[]string{"deposit", "chem", "1", "--bogus", "--json"}, "usage", exitUsage},
		{[]string{"backup", dir, "--json"}, "usage", exitUsage},
		{[]string{"withdraw", "chem", "999999", "--json"}, "insufficient_funds", exitRefused},
	} {
		var stdout, stderr strings.Builder
		exit := run(append(append([]string{"ingot"}, b.global...), tc.args...), &stdout, &stderr)
		var got jsonError
		if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || exit != tc.exit || got.Error.Code != tc.code ||
			got.Error.Exit != tc.exit || got.Error.Message == "" || stderr.Len() != 0 {
			t.Errorf("ingot %s: exit %d, stdout %q (%v), stderr %q; want exit %d and {\"error\": {\"code\": %q, ...}} on stdout alone",
				strings.Join(tc.args, " "), exit, stdout.String(), err, stderr.String(), tc.exit, tc.code)
		}
	}
	var written backupWritten
	b.json(&written, "backup", filepath.Join(dir, "copy.db"))
	if written.File != filepath.Join(dir, "copy.db") || written.Format != "bbolt" || written.Audit != "ok" || written.Entries == 0 || written.Bytes == 0 {
		t.Errorf("backup --json: %+v", written)
	}
}

// TestReadOnlyBankAndStoppedMunge: a change to a bank on a read-only mount,
// and a command that cannot get a MUNGE credential, exit 6 saying why
// (they exited 1). Mounting needs root.
func TestReadOnlyBankAndStoppedMunge(t *testing.T) {
	t.Setenv("INGOT_SERVER", "")
	var out strings.Builder
	code := run([]string{"ingot", "--server", "http://127.0.0.1:1", "--use-munge", "--munge-socket", filepath.Join(t.TempDir(), "no-munged"), "balance"}, &out, &out)
	if code != exitUnavailable || !strings.Contains(out.String(), "cannot run MUNGE") {
		t.Errorf("--use-munge without munged: exit %d\n%s", code, out.String())
	}

	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatalf("mount a tmpfs (INGOT_E2E=1 requires it): %v", err)
		}
		t.Skipf("needs root to mount a read-only file system: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	b := onFile(t, filepath.Join(dir, "bank.db"))
	b.ok("init")
	b.ok("account", "create", "chem")
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if out, code := b.run("deposit", "chem", "5"); code != exitUnavailable || !strings.Contains(out, "is not writable by this process") {
		t.Errorf("a deposit into a bank on a read-only mount: exit %d\n%s", code, out)
	}
	if out := b.ok("balance", "chem"); !strings.Contains(out, "chem") {
		t.Errorf("balance on a read-only mount:\n%s", out)
	}
}
