package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestFullDisk fills a small tmpfs under a bank and checks that a deposit
// that cannot be written fails with the system's reason, that every
// acknowledged deposit is still there, and that the bank works again once
// space is freed. It needs root (to mount the tmpfs); CI runs as root.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatalf("mount a 2 MiB tmpfs (INGOT_E2E=1 requires it): %v", err)
		}
		t.Skipf("full-disk test needs root to mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	path := filepath.Join(dir, "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := initBank(t, store)
	acked := 0
	deposit := func() error {
		_, err := l.Deposit(ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)})
		if err == nil {
			acked++
		}
		return err
	}
	for i := 0; i < 50; i++ {
		if err := deposit(); err != nil {
			t.Fatal(err)
		}
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
	checkDeposits(t, store, int64(acked))
	// Concurrent writers on the full disk, so that groups are run on top
	// of groups whose log write fails (the committer must then go back to
	// the durable state): whatever was acknowledged must all be there, and
	// nothing else. A reader meanwhile must always be answered, with at
	// least what was acknowledged before it asked.
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan error)
	go func() {
		reads := 0
		for {
			select {
			case <-stop:
				t.Logf("%d reads while writes failed", reads)
				readerDone <- nil
				return
			default:
			}
			mu.Lock()
			before := acked
			mu.Unlock()
			nb, err := l.BalanceAt("chem", time.Time{})
			if err != nil {
				readerDone <- fmt.Errorf("read %d while writes fail: %w", reads, err)
				return
			}
			if nb.Amount.LessThan(decimal.NewFromInt(int64(before))) {
				readerDone <- fmt.Errorf("read %d saw %s, but %d deposits were acknowledged before it", reads, nb.Amount, before)
				return
			}
			reads++
		}
	}()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, err := l.Deposit(ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)})
				if err == nil {
					mu.Lock()
					acked++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-readerDone; err != nil {
		t.Error(err)
	}
	checkDeposits(t, store, int64(acked))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := deposit(); err != nil {
		t.Fatalf("deposit after space was freed: %v", err)
	}
	checkDeposits(t, store, int64(acked))
	if err := store.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	// And the file reopens sound.
	store, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	checkDeposits(t, store, int64(acked))
}
