package boltstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// TestFullDisk fills a small tmpfs under a bank and checks that a deposit
// that cannot be written fails with the system's reason, that every
// acknowledged deposit is still there and nothing else, and that the bank
// works again once space is freed. It needs root (to mount the tmpfs); CI
// runs as root.
func TestFullDisk(t *testing.T) {
	dir := smallDisk(t, "2m")
	ctx := context.Background()
	path := filepath.Join(dir, "bank.db")
	makeBank(t, path, 50)
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := 50
	deposit := func() error {
		_, err := l.Deposit(ctx, ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)})
		if err == nil {
			mu.Lock()
			acked++
			mu.Unlock()
		}
		return err
	}
	// Fill what is left of the file system.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	var depositErr error
	for i := 0; i < 10000 && depositErr == nil; i++ {
		depositErr = deposit()
	}
	if depositErr == nil {
		t.Fatal("10,000 deposits fitted on a full 2 MiB file system")
	}
	t.Logf("after %d deposits: %v", acked, depositErr)
	if !strings.Contains(depositErr.Error(), "no space left on device") {
		t.Errorf("full-disk error does not say why: %v", depositErr)
	}
	// Concurrent writers on the full disk, so that groups fail together:
	// whatever was acknowledged must all be there, and nothing else.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				deposit()
			}
		}()
	}
	wg.Wait()
	checkDeposits(t, l, acked)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := deposit(); err != nil {
		t.Fatalf("deposit after space was freed: %v", err)
	}
	checkDeposits(t, l, acked)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	// And the file reopens sound.
	auditFile(t, path, boltstore.Options{ReadOnly: true})
}

// checkDeposits checks that chem holds exactly want deposits of 1.
func checkDeposits(t *testing.T, l *ledger.Ledger, want int) {
	t.Helper()
	nb, err := l.BalanceAt(context.Background(), "chem", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !nb.Balance.Amount.Equal(decimal.NewFromInt(int64(want))) {
		t.Errorf("chem holds %s, but %d deposits were acknowledged", nb.Balance.Amount, want)
	}
}

// smallDisk mounts a tmpfs of size (as mount's size=, "2m") on a new
// temporary directory until the test ends. It needs root; without it the
// test skips, except under INGOT_E2E=1, where it fails.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatalf("mount a %s tmpfs (INGOT_E2E=1 requires it): %v", size, err)
		}
		t.Skipf("a full-disk test needs root to mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	return dir
}
