package lien_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// BenchmarkPostgresCycle makes the lien + charge cycles of BenchmarkCycle
// in process on PostgreSQL with a synchronous standby (internal/pgtest: a
// commit is answered once the standby has it), at 1, 16 and 64 goroutines,
// through one bank, and through two banks on two stores of one database,
// as two `ingot serve` processes would. Beside each, from the same run:
//
//   - per_request_cycles/s: a plain pgx program doing each of a cycle's
//     two requests as one SQL transaction of its own (the journal's head row
//     taken FOR UPDATE, an entry of a request's size inserted, the head
//     moved, COMMIT), from as many goroutines; x_per_request is ingot's rate
//     over it. Group commit is what the engine is for: the bar (issue 28)
//     is x_per_request ≥ 1.5 at 64 goroutines.
//   - bbolt_cycles/s: the same cycles on a bbolt bank (BenchmarkCycle's).
func BenchmarkPostgresCycle(b *testing.B) {
	primary := pgtest.Start(b)
	primary.Standby(b)
	url := primary.NewDB(b)
	s := newSiteOn(b, func(tb testing.TB) ledger.Store { return pgstoretest.OpenURL(tb, url) })
	s.MustDeposit("chem", "1000000000000", time.Time{})
	other := pgstoretest.OpenURL(b, url)
	b.Cleanup(func() { other.Close() })
	l, err := ledger.Open(context.Background(), other, ledger.WithClock(s.Clock.Now))
	if err != nil {
		b.Fatal(err)
	}
	two := []*lien.Bank{s.lb, lien.New(l)}
	baseline := newPerRequest(b, primary.NewDB(b))
	onBolt := newSite(b)
	onBolt.MustDeposit("chem", "1000000000000", time.Time{})

	var jobs atomic.Int64 // job ids distinct over every run
	for _, workers := range []int{1, 16, 64} {
		for _, banks := range [][]*lien.Bank{two[:1], two} {
			b.Run(fmt.Sprintf("goroutines=%d/servers=%d", workers, len(banks)), func(b *testing.B) {
				perRequest := ledgertest.RateOf(b, workers, baseline.cycle)
				bolt := ledgertest.RateOf(b, workers, func() { cycleOn(b, onBolt.lb, onBolt.Clock.Now(), jobs.Add(1)) })
				ledgertest.Parallel(b, workers, func() {
					n := jobs.Add(1)
					cycleOn(b, banks[n%int64(len(banks))], s.Clock.Now(), n)
				})
				rate := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(rate, "cycles/s")
				b.ReportMetric(perRequest, "per_request_cycles/s")
				b.ReportMetric(rate/perRequest, "x_per_request")
				b.ReportMetric(bolt, "bbolt_cycles/s")
			})
		}
	}
}

// cycleOn places job n's lien on bank and charges it, as BenchmarkCycle's
// cycles do.
func cycleOn(b *testing.B, bank *lien.Bank, now time.Time, n int64) {
	id := fmt.Sprint("pg-", n)
	req := func(what string) ledger.Request { return ledger.Request{Actor: "bench", ID: id + what} }
	spec := lien.PlaceSpec{Job: job(id), User: "amy", Request: withStart(request(4, 3600), now)}
	if _, err := bank.Place(context.Background(), req("-lien"), spec); err != nil {
		b.Fatal(err)
	}
	u := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 1800, WallclockLimitSeconds: 3600, State: charge.Completed, Start: now}
	if _, err := bank.Charge(context.Background(), req("-charge"), lien.ChargeSpec{Job: job(id), Usage: u}); err != nil {
		b.Fatal(err)
	}
}

// perRequest is the baseline: a bank-like table pair written with one SQL
// transaction a request.
type perRequest struct {
	b     *testing.B
	pool  *pgxpool.Pool
	entry []byte
}

func newPerRequest(b *testing.B, url string) *perRequest {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url+"?pool_max_conns=64")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	// Every connection is made now, not inside a short run: 64 handshakes
	// (SCRAM's key derivation each) would be most of a run of a few
	// hundred cycles, and make the baseline look slower than it is.
	var conns []*pgxpool.Conn
	for range 64 {
		c, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	for _, sql := range []string{
		"CREATE TABLE head (id int PRIMARY KEY, seq bigint NOT NULL)",
		"INSERT INTO head VALUES (1, 0)",
		"CREATE TABLE journal (seq bigint PRIMARY KEY, body bytea NOT NULL)",
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	return &perRequest{b: b, pool: pool, entry: make([]byte, 1000)} // about a lien or charge entry with its records
}

// cycle is a cycle's two requests, a transaction each.
func (p *perRequest) cycle() {
	ctx := context.Background()
	for range 2 {
		tx, err := p.pool.Begin(ctx)
		if err != nil {
			p.b.Fatal(err)
		}
		var seq int64
		if err := tx.QueryRow(ctx, "SELECT seq FROM head WHERE id = 1 FOR UPDATE").Scan(&seq); err != nil {
			p.b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO journal VALUES ($1, $2)", seq+1, p.entry); err != nil {
			p.b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "UPDATE head SET seq = $1 WHERE id = 1", seq+1); err != nil {
			p.b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			p.b.Fatal(err)
		}
	}
}
