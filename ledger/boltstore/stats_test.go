package boltstore_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// TestOnCommitAndActiveLiens places liens from concurrent writers, then
// releases one: OnCommit hears of every Update call once, in groups of at
// least one, and ActiveLiens follows the index.
func TestOnCommitAndActiveLiens(t *testing.T) {
	var mu sync.Mutex
	var commits, calls int
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "bank.db"), boltstore.Options{
		OnCommit: func(n int, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if n < 1 || d <= 0 {
				t.Errorf("OnCommit(%d, %s): want a group of at least one and a duration", n, d)
			}
			commits++
			calls += n
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	const liens = 20
	placed := make([]ledger.Lien, liens)
	var wg sync.WaitGroup
	for i := range liens {
		wg.Go(func() {
			err := store.Update(func(tx ledger.Tx) error {
				id, err := tx.NextLienID()
				if err != nil {
					return err
				}
				placed[i] = ledger.Lien{ID: id, JobRef: ledger.JobRef{Account: "chem"}, State: ledger.LienActive, Expires: time.Unix(int64(id), 0)}
				encoded, err := placed[i].AppendJSON(nil)
				if err != nil {
					return err
				}
				return tx.PutLien(placed[i], encoded, nil)
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	released := placed[0]
	released.State = ledger.LienReleased
	if err := store.Update(func(tx ledger.Tx) error {
		encoded, err := released.AppendJSON(nil)
		if err != nil {
			return err
		}
		return tx.PutLien(released, encoded, &placed[0])
	}); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	if calls != liens+1 || commits < 1 || commits > calls {
		t.Errorf("OnCommit heard of %d calls in %d commits; want %d calls", calls, commits, liens+1)
	}
	mu.Unlock()
	if n, err := store.ActiveLiens(); n != liens-1 || err != nil {
		t.Errorf("ActiveLiens = %d, %v; want %d", n, err, liens-1)
	}
}
