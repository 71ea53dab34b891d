package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// TestPlaceAndReleaseInOneCall places a lien and releases it in the same
// call: the second Append must replace what the first stored, so that the
// lien leaves the active index and the reserved sums. The audit at the end
// compares the sums with a replay.
func TestPlaceAndReleaseInOneCall(t *testing.T) {
	bank := ledgertest.NewBank(t, bolttest.Open)
	bank.MustNode("chem", "chem.lab1")
	alloc := bank.MustDeposit("chem", "100", time.Time{})
	ten := decimal.NewFromInt(10)
	_, err := ledger.Mutate(context.Background(), bank.Ledger, bank.Req(), ledger.KindLienPlace, "place and release", func(w *ledger.Writer) (uint64, error) {
		id, err := w.Tx().NextLienID()
		if err != nil {
			return 0, err
		}
		l := ledger.Lien{ID: id, JobRef: ledger.JobRef{JobID: "j1", Machine: "m", Project: "chem.lab1", Account: "chem"},
			Amount: ten, Holds: []ledger.Hold{{Allocation: alloc, Amount: ten}}, Charged: decimal.Zero,
			Created: w.Now(), Expires: w.Now().Add(time.Hour), State: ledger.LienActive}
		if _, err := w.Append(ledger.Entry{Kind: ledger.KindLienPlace, Node: l.Project, Ref: l.JobID, Lien: &l}); err != nil {
			return 0, err
		}
		if active, err := w.Tx().ActiveLiens("chem"); err != nil || len(active) != 1 {
			t.Errorf("after the placement the account has active liens %v (%v), want lien %d", active, err, id)
		}
		released := l
		released.State = ledger.LienReleased
		_, err = w.Append(ledger.Entry{Kind: ledger.KindLienRelease, Node: l.Project, Ref: l.JobID, Lien: &released})
		return id, err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = bank.Store.View(context.Background(), func(tx ledger.Tx) error {
		active, err := tx.ActiveLiens("chem")
		if err != nil {
			return err
		}
		if len(active) != 0 {
			t.Errorf("the released lien is still active: %+v", active)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEntriesChainThroughFailedCallsAndReopens: the store seals each entry
// with the hash of the one before it after the call that appended it.
// Calls that append an entry and then fail, among calls that succeed in
// the same groups, must leave neither a gap nor a link to an undone entry;
// nor may a reopen, after which the entry before comes from the file. The
// audit checks every link and hash after each stage.
func TestEntriesChainThroughFailedCallsAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	open := func() *ledger.Ledger { return openBoltLedger(t, path) }
	errRefused := errors.New("refused after appending")
	var next atomic.Int64
	record := func(l *ledger.Ledger, fail bool) error {
		n := next.Add(1)
		rec := &ledger.Record{Kind: "test", Key: fmt.Sprint(n), Value: json.RawMessage(`{}`)}
		_, err := ledger.Mutate(context.Background(), l, ledger.Request{Actor: "test", ID: fmt.Sprint("req-", n)}, ledger.KindRecord, rec, func(w *ledger.Writer) (struct{}, error) {
			if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Record: rec}); err != nil {
				return struct{}{}, err
			}
			if fail {
				return struct{}{}, errRefused
			}
			return struct{}{}, nil
		})
		return err
	}
	audit := func(l *ledger.Ledger, stage string, entries uint64) {
		t.Helper()
		rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: true})
		if err != nil || len(rep.Problems) > 0 {
			t.Fatalf("%s: audit %v: %v", stage, err, rep.Problems)
		}
		if rep.Entries != entries {
			t.Fatalf("%s: %d entries, want %d", stage, rep.Entries, entries)
		}
	}
	entries := uint64(1) // the bank's first
	for round := range 3 {
		l := open()
		var wg sync.WaitGroup
		var kept atomic.Int64
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 30 {
					fail := (g+i)%3 == 0
					err := record(l, fail)
					if fail && !errors.Is(err, errRefused) || !fail && err != nil {
						t.Errorf("call failing %v: %v", fail, err)
					}
					if err == nil {
						kept.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		entries += uint64(kept.Load())
		audit(l, fmt.Sprint("round ", round), entries)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRetriesGetTheFirstAnswer: concurrent retries of a deposit, and one
// after the bank is reopened (the answer read from the file), get the
// first answer and deposit once; the same id with other content is a
// conflict.
func TestRetriesGetTheFirstAnswer(t *testing.T) {
	for range 1 {
		t.Run("deposit", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bank.db")
			open := func() *ledger.Ledger { return openBoltLedger(t, path) }
			l := open()
			if _, err := l.CreateNode(context.Background(), ledger.Request{Actor: "test", ID: "node"}, ledger.NodeSpec{Name: "chem"}); err != nil {
				t.Fatal(err)
			}
			req := ledger.Request{Actor: "test", ID: "deposit-1"}
			spec := ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(10)}
			receipts := make([]ledger.Receipt, 20)
			var wg sync.WaitGroup
			for i := range receipts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := l.Deposit(context.Background(), req, spec)
					if err != nil {
						t.Error(err)
					}
					receipts[i] = r
				}()
			}
			wg.Wait()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = open()
			defer l.Close()
			again, err := l.Deposit(context.Background(), req, spec)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range append(receipts, again) {
				if r.Seq != receipts[0].Seq || len(r.Allocations) != 1 || r.Allocations[0].ID != receipts[0].Allocations[0].ID {
					t.Errorf("answer %d: entry %d, allocations %+v; the first: entry %d, %+v", i, r.Seq, r.Allocations, receipts[0].Seq, receipts[0].Allocations)
				}
			}
			if nb, err := l.BalanceAt(context.Background(), "chem", time.Time{}); err != nil || nb.Amount.String() != "10" {
				t.Errorf("chem has %v (%v), want 10: deposited once", nb.Amount, err)
			}
			if _, err := l.Deposit(context.Background(), req, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(11)}); !errors.Is(err, ledger.ErrRequestConflict) {
				t.Errorf("the same id with other content: %v, want ErrRequestConflict", err)
			}
			if rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) > 0 {
				t.Errorf("audit: %v %v", err, rep.Problems)
			}
		})
	}
}

// openBoltLedger opens the bank on the bbolt file at path, made and
// initialised if new.
func openBoltLedger(t *testing.T, path string, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	store, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store, opts...)
	if errors.Is(err, ledger.ErrNotInitialized) {
		if err = ledger.Init(context.Background(), store, ledger.Settings{Precision: ledger.DefaultPrecision}, ledger.Request{Actor: "test"}, time.Now()); err == nil {
			l, err = ledger.Open(context.Background(), store, opts...)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAccountNumbersAfterClockGoesBack: an account made after the clock
// stepped back is numbered after the accounts made before it (Gold's
// clients name accounts by number: gdeposit -a 1 must stay chem's).
func TestAccountNumbersAfterClockGoesBack(t *testing.T) {
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("zoo")
	b.Clock.Advance(-time.Hour)
	b.MustNode("abc")
	b.MustNode("mid")
	numbers, err := b.AccountNumbers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if numbers["zoo"] != 1 || numbers["abc"] != 2 || numbers["mid"] != 3 {
		t.Errorf("numbers after the clock went back: %v, want zoo 1, abc 2, mid 3", numbers)
	}
}

// TestAppendRecord: a record is journaled with the change's last entry
// when that entry carries none, else in an entry of its own; the audit
// at the end replays both.
func TestAppendRecord(t *testing.T) {
	ctx := context.Background()
	bank := ledgertest.NewBank(t, bolttest.Open)
	bank.MustNode("chem", "chem.lab1")
	alloc := bank.MustDeposit("chem", "100", time.Time{})
	ten := decimal.NewFromInt(10)
	rec := func(key string) ledger.Record {
		return ledger.Record{Kind: "test.done", Key: key, Value: json.RawMessage(`"` + key + `"`)}
	}
	for _, c := range []struct {
		name    string
		lien    bool // the change places a lien first
		record  bool // the change journals a record first
		entries int
	}{
		{"with the lien's entry", true, false, 1},
		{"alone", false, false, 1},
		{"after an entry with a record", false, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bank.JournalLen()
			_, err := ledger.Mutate(ctx, bank.Ledger, bank.Req(), ledger.KindRecord, c.name, func(w *ledger.Writer) (struct{}, error) {
				if c.lien {
					id, err := w.Tx().NextLienID()
					if err != nil {
						return struct{}{}, err
					}
					l := ledger.Lien{ID: id, JobRef: ledger.JobRef{JobID: "j1", Machine: "m", Project: "chem.lab1", Account: "chem"},
						Amount: ten, Holds: []ledger.Hold{{Allocation: alloc, Amount: ten}}, Charged: decimal.Zero,
						Created: w.Now(), Expires: w.Now().Add(time.Hour), State: ledger.LienActive}
					if _, err := w.Append(ledger.Entry{Kind: ledger.KindLienPlace, Node: l.Project, Ref: l.JobID, Lien: &l}); err != nil {
						return struct{}{}, err
					}
				}
				if c.record {
					r := rec("first " + c.name)
					if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Record: &r}); err != nil {
						return struct{}{}, err
					}
				}
				_, err := w.AppendRecord(ledger.Entry{Kind: ledger.KindRecord, Description: c.name}, rec(c.name))
				return struct{}{}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := bank.JournalLen() - n; got != c.entries {
				t.Fatalf("the change journaled %d entries, want %d", got, c.entries)
			}
			err = bank.Store.View(ctx, func(tx ledger.Tx) error {
				e, ok, err := ledger.ReadEntry(tx, uint64(bank.JournalLen()))
				if err != nil || !ok {
					return fmt.Errorf("the last entry: %v %v", ok, err)
				}
				if e.Record == nil || e.Record.Key != c.name || (e.Lien != nil) != c.lien {
					t.Errorf("the last entry carries record %+v, lien %v", e.Record, e.Lien != nil)
				}
				r, ok, err := tx.Record("test.done", c.name)
				if err != nil || !ok || string(r.Value) != `"`+c.name+`"` {
					t.Errorf("the record: %+v %v %v", r, ok, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
