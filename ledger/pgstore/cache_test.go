package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
)

// record reads a record in an Update, through the committer's cache.
func record(t *testing.T, s *Store, key string) string {
	t.Helper()
	var value string
	err := s.Update(context.Background(), func(tx ledger.Tx) error {
		r, ok, err := tx.Record("test", key)
		if ok {
			value = string(r.Value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return value
}

func putRecord(s *Store, key, value string) error {
	return s.Update(context.Background(), func(tx ledger.Tx) error {
		return tx.PutRecord(ledger.Record{Kind: "test", Key: key, Value: []byte(value)})
	})
}

// twoStores opens two stores on one new bank, as two `ingot serve`.
func twoStores(t *testing.T) (a, b *Store) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.DB(t)
	a, err := Open(ctx, url, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(ctx, url, Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestCacheSeesAnotherServer: two stores on one database, as two `ingot
// serve`; what one writes, even a change that appends no journal entry,
// the other's next change reads, not its cached copy.
func TestCacheSeesAnotherServer(t *testing.T) {
	a, b := twoStores(t)
	for i := range 3 {
		if err := putRecord(a, "k", fmt.Sprint(i, "a")); err != nil {
			t.Fatal(err)
		}
		if got := record(t, a, "k"); got != fmt.Sprint(i, "a") {
			t.Fatalf("a reads %q after writing %q", got, fmt.Sprint(i, "a"))
		}
		if err := putRecord(b, "k", fmt.Sprint(i, "b")); err != nil {
			t.Fatal(err)
		}
		if got := record(t, a, "k"); got != fmt.Sprint(i, "b") {
			t.Fatalf("a reads %q after b wrote %q", got, fmt.Sprint(i, "b"))
		}
	}
}

// TestCacheDropsFailedWrites: a change that fails leaves nothing in the
// cache, whether it failed before or after its writes reached PostgreSQL,
// and the changes of its group that succeeded stay.
func TestCacheDropsFailedWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.DB(t), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := putRecord(s, "k", "1"); err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("refused")
	for _, sent := range []bool{false, true} {
		err := s.Update(ctx, func(tx ledger.Tx) error {
			if err := tx.PutRecord(ledger.Record{Kind: "test", Key: "k", Value: []byte("2")}); err != nil {
				return err
			}
			if sent { // a read sends the write first
				if _, err := tx.Records("test"); err != nil {
					return err
				}
			}
			if r, _, _ := tx.Record("test", "k"); string(r.Value) != "2" {
				return fmt.Errorf("the change reads %q, not its own write", r.Value)
			}
			return refuse
		})
		if !errors.Is(err, refuse) {
			t.Fatalf("sent %v: %v, want the change's own error", sent, err)
		}
		if got := record(t, s, "k"); got != "1" {
			t.Errorf("sent %v: after a failed change the record reads %q, want 1", sent, got)
		}
	}
}

// inOneGroup runs the changes concurrently while the committer is held,
// so that it takes them as one group, until they ran in one (the tx each
// was given first is the group's) and returns their errors.
func inOneGroup(t *testing.T, s *Store, changes ...func(tx ledger.Tx) error) []error {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		release, held := make(chan struct{}), make(chan struct{})
		go s.Update(ctx, func(ledger.Tx) error { close(held); <-release; return nil })
		<-held
		var mu sync.Mutex
		first := make([]ledger.Tx, len(changes))
		errs := make([]error, len(changes))
		var wg sync.WaitGroup
		for i, change := range changes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Update(ctx, func(tx ledger.Tx) error {
					mu.Lock()
					if first[i] == nil {
						first[i] = tx
					}
					mu.Unlock()
					return change(tx)
				})
			}()
		}
		time.Sleep(100 * time.Millisecond) // they wait for the committer
		close(release)
		wg.Wait()
		groups := map[ledger.Tx]bool{}
		for _, tx := range first {
			groups[tx] = true
		}
		if len(groups) == 1 {
			return errs
		}
	}
	t.Fatal("the changes never ran in one group")
	return nil
}

// TestCacheDropsFailedWritesInAGroup: in a group where one change fails
// after its write reached PostgreSQL and another succeeds, the group
// commits the other's write alone, and the cache has the same.
func TestCacheDropsFailedWritesInAGroup(t *testing.T) {
	s, err := Open(context.Background(), pgtest.DB(t), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range []string{"failed", "done"} {
		if err := putRecord(s, k, "0"); err != nil {
			t.Fatal(err)
		}
	}
	refuse := errors.New("refused")
	write := func(k string, fail error) func(ledger.Tx) error {
		return func(tx ledger.Tx) error {
			if err := tx.PutRecord(ledger.Record{Kind: "test", Key: k, Value: []byte("1")}); err != nil {
				return err
			}
			if _, err := tx.Records("test"); err != nil { // sends the write
				return err
			}
			return fail
		}
	}
	errs := inOneGroup(t, s, write("failed", refuse), write("done", nil))
	if !errors.Is(errs[0], refuse) || errs[1] != nil {
		t.Fatalf("the changes answered %v, want %v and success", errs, refuse)
	}
	if got := record(t, s, "done"); got != "1" {
		t.Errorf("the change that succeeded reads %q, want 1", got)
	}
	if got := record(t, s, "failed"); got != "0" {
		t.Errorf("the change that failed left %q in its record, want 0", got)
	}
}

// TestWriteRefusedByPostgreSQL: a write PostgreSQL refuses, sent after its
// change's function has returned (with the next change's statements or at
// the group's end), fails that change alone; the group's others are made.
func TestWriteRefusedByPostgreSQL(t *testing.T) {
	s, err := Open(context.Background(), pgtest.DB(t), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bad := func(tx ledger.Tx) error { // text holds no zero byte
		return tx.PutRecord(ledger.Record{Kind: "test", Key: "bad\x00", Value: []byte("1")})
	}
	good := func(k string) func(ledger.Tx) error {
		return func(tx ledger.Tx) error {
			if _, _, err := tx.Record("test", "other"); err != nil { // a read: sends what earlier changes left
				return err
			}
			return tx.PutRecord(ledger.Record{Kind: "test", Key: k, Value: []byte("1")})
		}
	}
	if err := s.Update(context.Background(), func(tx ledger.Tx) error { return bad(tx) }); err == nil {
		t.Fatal("a record PostgreSQL refuses was stored")
	}
	errs := inOneGroup(t, s, good("a"), bad, good("b"), good("c"))
	if errs[0] != nil || errs[1] == nil || errs[2] != nil || errs[3] != nil {
		t.Fatalf("the changes answered %v, want only the second to fail", errs)
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := record(t, s, k); got != "1" {
			t.Errorf("record %s reads %q after its change succeeded", k, got)
		}
	}
}

// TestWritesSentOnce: a change's writes wait and go as one row a record,
// the last written: a record written twice, then deleted, then written
// again, a lien stored twice, a record deleted. Another store, whose cache
// knows nothing, reads what the last writes say; and a read in the change
// that depends on a write waiting (the job's charges, the records of a
// kind) sees it.
func TestWritesSentOnce(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	if err := putRecord(a, "gone", "0"); err != nil {
		t.Fatal(err)
	}
	lien := ledger.Lien{ID: 1, JobRef: ledger.JobRef{JobID: "j", Machine: "m", Account: "chem"}, State: ledger.LienActive, Expires: time.Unix(1e9, 0)}
	err := a.Update(ctx, func(tx ledger.Tx) error {
		for _, r := range []ledger.Record{
			{Kind: "test", Key: "k", Value: []byte("1")},
			{Kind: "test", Key: "k", Value: []byte("2")},
			{Kind: "test", Key: "k", Deleted: true},
			{Kind: "test", Key: "k", Value: []byte("3")},
			{Kind: "test", Key: "gone", Deleted: true},
		} {
			if err := tx.PutRecord(r); err != nil {
				return err
			}
		}
		if err := tx.PutLien(lien, 0); err != nil {
			return err
		}
		settled := lien
		settled.State = ledger.LienSettled
		if err := tx.PutLien(settled, 0); err != nil {
			return err
		}
		if err := tx.PutCharge(ledger.Charge{ID: 1, JobRef: lien.JobRef, Lien: 1}, 0); err != nil {
			return err
		}
		if cs, err := tx.JobCharges("m", "j"); err != nil || len(cs) != 1 {
			return fmt.Errorf("the change reads the job's charges as %v (%v), want its own charge", cs, err)
		}
		if rs, err := tx.Records("test"); err != nil || len(rs) != 1 || string(rs[0].Value) != "3" {
			return fmt.Errorf("the change reads its records as %v (%v), want k=3", rs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = b.View(ctx, func(tx ledger.Tx) error {
		rs, err := tx.Records("test")
		if err != nil || len(rs) != 1 || rs[0].Key != "k" || string(rs[0].Value) != "3" {
			return fmt.Errorf("records %v (%v), want k=3 alone", rs, err)
		}
		l, ok, err := tx.Lien(1)
		if err != nil || !ok || l.State != ledger.LienSettled {
			return fmt.Errorf("lien 1: %+v %v %v, want it settled", l, ok, err)
		}
		if active, err := tx.ActiveLiens("chem"); err != nil || len(active) != 0 {
			return fmt.Errorf("active liens %v (%v), want none", active, err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
