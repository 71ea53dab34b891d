package boltstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, ledgertest.Bolt)
}

// TestRecorderStageBothWays runs the conformance suite, the deferred
// answers' test and the crash test (its killed children too) with a
// recorder goroutine and without one (the syncer making the records),
// whichever the machine's cores would choose.
func TestRecorderStageBothWays(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("recorder ", on), func(t *testing.T) {
			defer boltstore.RecorderStage(on)()
			t.Setenv(envCrashRecorder, map[bool]string{false: "off", true: "on"}[on])
			ledgertest.Conformance(t, ledgertest.Bolt)
			TestDeferredAnswers(t)
			TestCrashRecovery(t)
		})
	}
}

// TestBackupWhileWriting copies the bank while deposits go on and checks the
// copy is a sound bank of its own.
func TestBackupWhileWriting(t *testing.T) {
	b := ledgertest.NewBank(t, ledgertest.Bolt)
	b.MustNode("chem")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				b.MustDeposit("chem", "1", time.Time{})
			}
		}
	}()
	dest := filepath.Join(t.TempDir(), "copy.db")
	f, err := os.Create(dest)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := b.Backup(f); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(dest, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := ledger.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := l.Audit()
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("audit of the copy: %v %v", rep.Problems, err)
	}
	if rep.Allocations == 0 {
		t.Error("the copy holds no allocations: backup ran before any deposit")
	}
}

func TestOpenRefusals(t *testing.T) {
	dir := t.TempDir()
	if _, err := boltstore.Open(filepath.Join(dir, "missing.db"), boltstore.Options{ReadOnly: true}); err == nil {
		t.Error("read-only open of a missing file succeeded")
	}
	path := filepath.Join(dir, "bank.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := ledger.Open(s); !errors.Is(err, ledger.ErrNotInitialized) {
		t.Errorf("open of an empty store: %v, want ErrNotInitialized", err)
	}
	// A second writer in another process would wait for the lock; bbolt
	// locks per open file description, so a second Open here shows it.
	if _, err := boltstore.Open(path, boltstore.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, boltstore.ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(ledger.Tx) error { return nil }); !errors.Is(err, boltstore.ErrClosed) {
		t.Errorf("update after close: %v, want ErrClosed", err)
	}
}

// TestGroupFailureIsolated checks that a function failing after it wrote
// rolls back only itself: the others in its group still commit.
func TestGroupFailureIsolated(t *testing.T) {
	b := ledgertest.NewBank(t, ledgertest.Bolt)
	b.MustNode("chem")
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%5 == 0 {
				errs[i] = b.Store.Update(func(tx ledger.Tx) error {
					if err := tx.PutNode(ledger.Node{Name: "ghost"}); err != nil {
						return err
					}
					return boom
				})
				return
			}
			_, errs[i] = b.Deposit(b.Req(), ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if want := i%5 == 0; want != errors.Is(err, boom) || (!want && err != nil) {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if _, err := b.Node("ghost"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a failed update's write persisted: %v", err)
	}
	if got := b.MustBalance("chem").Amount; !got.Equal(decimal.NewFromInt(40)) {
		t.Errorf("amount = %s, want 40", got)
	}
}

// TestCacheForgetsRolledBackWrites: a change that writes a node, reads it
// back (so the committer's cache could keep the uncommitted copy) and then
// fails is rolled back; later changes and reads see the committed node.
func TestCacheForgetsRolledBackWrites(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "bank.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	committed := ledger.Node{Name: "chem", Description: "committed", Active: true}
	if err := store.Update(func(tx ledger.Tx) error { return tx.PutNode(committed) }); err != nil {
		t.Fatal(err)
	}
	readNode := func(tx ledger.Tx) (ledger.Node, error) {
		n, ok, err := tx.Node("chem")
		if err == nil && !ok {
			err = errors.New("node chem is missing")
		}
		return n, err
	}
	fail := errors.New("refused after writing")
	err = store.Update(func(tx ledger.Tx) error {
		if err := tx.PutNode(ledger.Node{Name: "chem", Description: "rolled back", Active: true}); err != nil {
			return err
		}
		if n, err := readNode(tx); err != nil || n.Description != "rolled back" {
			t.Errorf("inside the change: %+v %v", n, err)
		}
		return fail
	})
	if !errors.Is(err, fail) {
		t.Fatalf("update: %v, want %v", err, fail)
	}
	for _, read := range []func(func(ledger.Tx) error) error{store.Update, store.View} {
		if err := read(func(tx ledger.Tx) error {
			n, err := readNode(tx)
			if err == nil && n.Description != committed.Description {
				t.Errorf("after the rollback the node reads %q, want %q", n.Description, committed.Description)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}
