package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProgressLines: long work shows how far it has gone on stderr, a line
// per INGOT_PROGRESS_INTERVAL when stderr is not a terminal (here: every
// write of a backup), and work shorter than the interval says nothing.
func TestProgressLines(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "100")
	dir := t.TempDir()

	var stdout, stderr strings.Builder
	if code := run(append(append([]string{"ingot"}, b.global...), "backup", filepath.Join(dir, "quiet.db")), &stdout, &stderr); code != exitOK || stderr.Len() != 0 {
		t.Errorf("a short backup: exit %d, stderr %q; want nothing on stderr", code, stderr.String())
	}

	t.Setenv("INGOT_PROGRESS_INTERVAL", "1ns")
	stdout.Reset()
	stderr.Reset()
	if code := run(append(append([]string{"ingot"}, b.global...), "backup", filepath.Join(dir, "shown.db")), &stdout, &stderr); code != exitOK {
		t.Fatalf("backup: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	line := regexp.MustCompile(`(?m)^backup: \d+ of \d+ bytes \(\d+%\), \d+/s`)
	if !line.MatchString(stderr.String()) || !strings.Contains(stdout.String(), "audit OK") {
		t.Errorf("backup with INGOT_PROGRESS_INTERVAL=1ns: stderr\n%s\nstdout\n%s\nwant progress lines, then the summary", stderr.String(), stdout.String())
	}
}
