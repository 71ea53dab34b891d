package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
)

// TestUpgradeThroughCLI: a command that only reads refuses a bank of an
// earlier schema, saying how to upgrade a copy, and leaves the file as it
// was (an old backup read with a newer ingot stays the backup it was);
// ingot upgrade upgrades it, says so in one line on stderr naming the copy
// of the file as it was, and the reads answer; a change upgrades too.
func TestUpgradeThroughCLI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	before := bolttest.WriteOldBank(t, path, "schema7-clean.db")
	t.Setenv("INGOT_SERVER", "")
	for _, read := range [][]string{{"balance"}, {"audit", "--full"}, {"journal", "--node", "bio"}, {"account", "list"}} {
		_, stderr, code := runCLI(append([]string{"--db", path}, read...)...)
		if code != exitUnavailable || !strings.Contains(stderr, "has schema 7") || !strings.Contains(stderr, "ingot --db COPY upgrade") {
			t.Errorf("%s of a schema 7 bank: exit %d, stderr %q; want exit 6 saying how to upgrade a copy", read, code, stderr)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, before) {
			t.Fatalf("%s rewrote the schema 7 bank", read)
		}
	}
	if matches, _ := filepath.Glob(path + ".*"); len(matches) != 0 {
		t.Errorf("reads left %v", matches)
	}

	stdout, stderr, code := runCLI("--db", path, "upgrade")
	want := fmt.Sprintf("ingot: upgraded %s from schema 7 to %d; the file as it was is %s.schema7.bak\n", path, boltstore.SchemaVersion, path)
	if code != exitOK || stderr != want || stdout != "" {
		t.Fatalf("upgrade of a schema 7 bank: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
	}
	backup, err := os.ReadFile(path + ".schema7.bak")
	if err != nil || !bytes.Equal(backup, before) {
		t.Errorf("the backup (%d bytes, %v) is not the file as it was (%d bytes)", len(backup), err, len(before))
	}
	// bio's amount, reserved and balance: 200 - 10.50 + 7, no lien
	// (ledger/boltstore/testdata/README.md).
	stdout, stderr, code = runCLI("--db", path, "balance")
	if code != exitOK || stderr != "" || !regexp.MustCompile(`(?m)^bio +196\.50 +0\.00 +196\.50 `).MatchString(stdout) {
		t.Errorf("balance after the upgrade: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if stdout, _, code := runCLI("--db", path, "upgrade"); code != exitOK || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("upgrade of an upgraded bank: exit %d\n%s", code, stdout)
	}

	// An upgrade shows its progress: the copy of the file, then the
	// journal's index (a schema before 9), here at every report.
	t.Setenv("INGOT_PROGRESS_INTERVAL", "1ns")
	shown := filepath.Join(t.TempDir(), "old.db")
	bolttest.WriteOldBank(t, shown, "schema7-clean.db")
	_, stderr, code = runCLI("--db", shown, "upgrade")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^upgrade: copy of the file as it was: (\d+) of (\d+) bytes \(100%\)`),
		regexp.MustCompile(`(?m)^upgrade: index of the journal: (\d+) of (\d+) journal entries \(100%\)`),
	} {
		if code != exitOK || !want.MatchString(stderr) {
			t.Errorf("upgrade with INGOT_PROGRESS_INTERVAL=1ns: exit %d, stderr\n%s\nwant %s", code, stderr, want)
		}
	}
	t.Setenv("INGOT_PROGRESS_INTERVAL", "")

	// A change upgrades the bank, as serve does.
	changed := filepath.Join(t.TempDir(), "old.db")
	bolttest.WriteOldBank(t, changed, "schema7-clean.db")
	if _, stderr, code := runCLI("--db", changed, "deposit", "bio", "1"); code != exitOK || !strings.Contains(stderr, "upgraded "+changed+" from schema 7") {
		t.Errorf("a deposit into a schema 7 bank: exit %d, stderr %q", code, stderr)
	}
}

// TestServeUpgrade: serve on a bank of an earlier schema upgrades it and
// logs it, with the copy of the file as it was.
func TestServeUpgrade(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	bolttest.WriteOldBank(t, path, "schema7-clean.db")
	srv := startServe(t, "--db", path, "serve", "--listen", "127.0.0.1:0", "--first-admin-key", filepath.Join(dir, "admin.key"))
	srv.line(t, "listening on ")
	if err := srv.shutdown(t); err != nil {
		t.Fatal(err)
	}
	logs := srv.stderr.String()
	want := fmt.Sprintf(`"msg":"upgraded the bank","db":%q,"from schema":7,"to schema":%d,"the file as it was":%q`, path, boltstore.SchemaVersion, path+".schema7.bak")
	if !strings.Contains(logs, want) {
		t.Errorf("serve's log lacks %s:\n%s", want, logs)
	}
}

// TestRefusedSchemasThroughCLI: a bank of a newer ingot, of schema 1, or
// of schema 7 left with its log by a crash, is refused with exit 6 and a
// message saying what to do, and left as it was.
func TestRefusedSchemasThroughCLI(t *testing.T) {
	t.Setenv("INGOT_SERVER", "")
	newer := filepath.Join(t.TempDir(), "newer.db")
	if _, stderr, code := runCLI("--db", newer, "init"); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	bolttest.SetSchema(t, newer, boltstore.SchemaVersion+1)
	first := filepath.Join(t.TempDir(), "first.db")
	bolttest.WriteOldBank(t, first, "schema1-clean.db")
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	bolttest.WriteOldBank(t, crashed, "schema7-crashed.db")
	bolttest.WriteOldBank(t, crashed+"-wal.1", "schema7-crashed.db-wal.1")
	for _, c := range []struct{ path, says string }{
		{newer, fmt.Sprintf("made by a newer ingot: %s has schema %d, and this ingot reads schemas up to %d: upgrade ingot", newer, boltstore.SchemaVersion+1, boltstore.SchemaVersion)},
		{first, first + " has schema 1, that of the first ingots"},
		{crashed, crashed + " (schema 7) hold changes the file may not have yet"},
	} {
		before, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"balance"}, {"audit"}, {"deposit", "chem", "1"}} {
			_, stderr, code := runCLI(append([]string{"--db", c.path}, args...)...)
			if code != exitUnavailable || !strings.Contains(stderr, c.says) {
				t.Errorf("%s on %s: exit %d, stderr %q; want exit 6 saying %q", args[0], filepath.Base(c.path), code, stderr, c.says)
			}
		}
		if after, err := os.ReadFile(c.path); err != nil || !bytes.Equal(after, before) {
			t.Errorf("%s changed (%v)", c.path, err)
		}
		if left, _ := filepath.Glob(c.path + ".*"); len(left) > 0 {
			t.Errorf("files beside the refused bank: %v", left)
		}
	}
}
