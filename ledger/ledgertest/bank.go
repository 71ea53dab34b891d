package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// Epoch is where every test bank's clock starts: a Monday, in UTC.
var Epoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Clock is a settable clock for tests.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Bank is a temporary bank for one test.
type Bank struct {
	*ledger.Ledger
	Store ledger.Store
	Clock *Clock
	t     testing.TB
	reqs  atomic.Int64
}

// OpenStore opens a new, empty store for a test.
type OpenStore func(t testing.TB) ledger.Store

// NewBank initialises a bank (precision 2) on a new store, opens it with
// the test clock and opts, and audits it when the test ends: any audit
// problem fails the test.
func NewBank(t testing.TB, open OpenStore, opts ...ledger.Option) *Bank {
	t.Helper()
	return NewBankWithPrecision(t, open, ledger.DefaultPrecision, opts...)
}

// NewBankWithPrecision is NewBank with another currency precision.
func NewBankWithPrecision(t testing.TB, open OpenStore, precision int32, opts ...ledger.Option) *Bank {
	t.Helper()
	store := open(t)
	clock := &Clock{now: Epoch}
	if err := ledger.Init(context.Background(), store, ledger.Settings{Precision: precision}, ledger.Request{Actor: "test"}, clock.Now()); err != nil {
		t.Fatalf("init bank: %v", err)
	}
	l, err := ledger.Open(context.Background(), store, append([]ledger.Option{ledger.WithClock(clock.Now)}, opts...)...)
	if err != nil {
		t.Fatalf("open bank: %v", err)
	}
	b := &Bank{Ledger: l, Store: store, Clock: clock, t: t}
	t.Cleanup(func() {
		b.MustAudit()
		if err := store.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return b
}

// MustAudit runs the audit and fails the test on any problem.
func (b *Bank) MustAudit() ledger.AuditReport {
	b.t.Helper()
	rep, err := b.Audit(context.Background(), ledger.AuditOptions{Full: true})
	if err != nil {
		b.t.Fatalf("audit: %v", err)
	}
	if len(rep.Problems) > 0 {
		b.t.Fatalf("audit found %d problems:\n%s", len(rep.Problems), strings.Join(rep.Problems, "\n"))
	}
	return rep
}

// Req is a fresh request with a unique id.
func (b *Bank) Req() ledger.Request {
	return ledger.Request{Actor: "test", ID: fmt.Sprintf("req-%d", b.reqs.Add(1))}
}

// Dec parses a decimal or fails the test.
func Dec(t testing.TB, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatalf("decimal %q: %v", s, err)
	}
	return d
}

// MustNode creates nodes or fails the test.
func (b *Bank) MustNode(names ...string) {
	b.t.Helper()
	for _, n := range names {
		if _, err := b.CreateNode(context.Background(), b.Req(), ledger.NodeSpec{Name: n}); err != nil {
			b.t.Fatalf("create node %s: %v", n, err)
		}
	}
}

// MustDeposit deposits into a new allocation ending at end (zero: never)
// and returns its id.
func (b *Bank) MustDeposit(account, amount string, end time.Time) uint64 {
	b.t.Helper()
	r, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: account, Amount: Dec(b.t, amount), End: end})
	if err != nil {
		b.t.Fatalf("deposit %s into %s: %v", amount, account, err)
	}
	return r.Allocations[0].ID
}

// MustBalance returns a node's balance now or fails the test.
func (b *Bank) MustBalance(name string) ledger.NodeBalance {
	b.t.Helper()
	nb, err := b.BalanceAt(context.Background(), name, time.Time{})
	if err != nil {
		b.t.Fatalf("balance of %s: %v", name, err)
	}
	return nb
}

// Race runs call(i) for i in [0, n) all at once and counts the calls that
// succeeded and those refused with ErrInsufficientFunds; any other error
// fails the test.
func Race(t testing.TB, n int, call func(i int) error) (ok, refused int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := call(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ledger.ErrInsufficientFunds):
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return ok, refused
}

// JournalLen is the number of journal entries.
func (b *Bank) JournalLen() int {
	b.t.Helper()
	es, err := b.Journal(context.Background(), ledger.JournalFilter{})
	if err != nil {
		b.t.Fatalf("journal: %v", err)
	}
	return len(es)
}
