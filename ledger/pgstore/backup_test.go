package pgstore_test

import (
	"bytes"
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
)

// TestBackupWhileWriting backs the bank up while deposits go on, restores
// the backup with psql into an empty database, and finds there a sound
// bank (a full audit, the engine's check among it) of the balance the
// journal it holds gives.
func TestBackupWhileWriting(t *testing.T) {
	psql := pgtest.Binary(t, "psql")
	b := ledgertest.NewBank(t, pgstoretest.Open)
	b.MustNode("chem")
	b.MustDeposit("chem", "1", time.Time{})
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
	time.Sleep(100 * time.Millisecond)
	var backup bytes.Buffer
	n, err := b.Backup(context.Background(), &backup)
	close(stop)
	wg.Wait()
	if err != nil || n != int64(backup.Len()) {
		t.Fatalf("backup: %d bytes (%d written), %v", n, backup.Len(), err)
	}
	url := pgtest.DB(t)
	restore := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url)
	restore.Stdin = &backup
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	s := pgstoretest.OpenURL(t, url)
	defer s.Close()
	l, err := ledger.Open(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: true})
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("audit of the restored bank: %q %v", rep.Problems, err)
	}
	entries, err := l.Journal(context.Background(), ledger.JournalFilter{})
	if err != nil {
		t.Fatal(err)
	}
	deposits := len(entries) - 2 // the bank's start, and chem
	bal, err := l.BalanceAt(context.Background(), "chem", time.Time{})
	if err != nil || bal.Amount.IntPart() != int64(deposits) || deposits < 2 {
		t.Errorf("the copy holds %s credits (%v) and %d deposits", bal.Amount, err, deposits)
	}
	if live := b.JournalLen(); live < len(entries) {
		t.Errorf("the copy has %d entries, the bank %d", len(entries), live)
	}
}
