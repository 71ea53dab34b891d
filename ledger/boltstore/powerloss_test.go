package boltstore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ingot-hpc/ingot/internal/lazyfs"
)

// mountLazy mounts a lazyfs (a file system that keeps writes in memory
// until they are fsynced, and loses the rest at a power cut) on a new
// directory, with durable's content. Without FUSE the test is skipped,
// unless INGOT_E2E=1 says it must run.
func mountLazy(t *testing.T, durable *lazyfs.State) *lazyfs.FS {
	t.Helper()
	fsys, err := lazyfs.Mount(t.TempDir(), durable)
	if err != nil {
		if os.Getenv("INGOT_E2E") != "1" && (errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist)) {
			t.Skipf("power-loss tests need FUSE (/dev/fuse, as root): %v", err)
		}
		t.Fatalf("mount lazyfs: %v", err)
	}
	t.Cleanup(func() { fsys.Unmount() })
	return fsys
}

// TestPowerLoss runs the crash test's writer on a file system that loses
// every write not yet fsynced, cuts the power under it (the writer killed,
// then everything unsynced dropped), and reboots: every acknowledged
// change must be there and the audit clean, after every cut.
func TestPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("power-loss test; skipped with -short")
	}
	var state *lazyfs.State
	acked := map[string]uint64{}
	for round := range 5 {
		fsys := mountLazy(t, state)
		path := filepath.Join(fsys.Dir(), "bank.db")
		acks, errs := runChildUntilKilled(t, path, round, 50+round*40, nil)
		if len(errs) > 0 {
			t.Fatalf("round %d: changes failed: %q", round, errs)
		}
		for id, seq := range acks {
			acked[id] = seq
		}
		state = fsys.PowerCut()
		if err := fsys.Unmount(); err != nil {
			t.Fatal(err)
		}
		rebooted := mountLazy(t, state)
		checkBank(t, filepath.Join(rebooted.Dir(), "bank.db"), fmt.Sprintf("after power cut %d", round), acked)
		state = rebooted.PowerCut() // nothing unsynced: the check only read
		rebooted.Unmount()
	}
	t.Logf("%d acknowledged requests survived 5 power cuts", len(acked))
}

// TestFailedSyncStopsTheStore makes the file system fail fsyncs while the
// writer runs, until the first change is refused: that change, and every
// one after it, must be refused although the syncs work again (no
// acknowledgement after the first refusal), and after a power cut every
// acknowledged change is there, the audit clean.
func TestFailedSyncStopsTheStore(t *testing.T) {
	fsys := mountLazy(t, nil)
	path := filepath.Join(fsys.Dir(), "bank.db")
	failing, refused := false, false
	acks, errs := runChildUntilKilled(t, path, 0, 0, func(n int) bool {
		switch {
		case n == 100 && !failing:
			fsys.FailSyncs(syscall.EIO)
			failing = true
		case n > 0 && refused:
			t.Errorf("acknowledgement %d came after a refusal", n)
			return true
		case n < 0:
			// The disk comes back at once: the store must still refuse
			// every change, as nobody knows what the failed sync left.
			fsys.FailSyncs(0)
			refused = true
			return -n >= 20 // twenty refusals seen
		}
		return false
	})
	if len(errs) < 20 {
		t.Fatalf("%d refusals after the sync failed", len(errs))
	}
	if !strings.Contains(errs[0], "input/output error") {
		t.Errorf("the first refusal does not say the sync failed: %s", errs[0])
	}
	for _, e := range errs[1:] {
		if !strings.Contains(e, "refuses every change until the bank is opened again") {
			t.Errorf("a later change was not refused as the stopped store's: %s", e)
		}
	}
	state := fsys.PowerCut()
	fsys.Unmount()
	rebooted := mountLazy(t, state)
	checkBank(t, filepath.Join(rebooted.Dir(), "bank.db"), "after the failed sync and a power cut", acks)
}
