package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/proto/api"
)

// BenchmarkSubmitQuote is the call Slurm's submit hook makes for each job
// (a quote saying whether the lien would be granted), one at a time as the
// controller makes them, to `ingot serve` over loopback: "idle" with
// nothing else to do, "load" while 64 other clients make lien + charge
// cycles as fast as they can. The controller waits for the call, and every
// other submission with it.
//
// Metrics: p50_ms and p99_ms of one quote; under load also x_idle_p99, the
// p99 over the idle p99 of the same run, and the load's cycles/s. The bar
// (issue 26): p99 ≤ 5 ms under load.
func BenchmarkSubmitQuote(b *testing.B) {
	// The load stops when the quotes are done, or after this many cycles.
	const maxLoadCycles = 1_000_000
	served := newServedBank(b)
	srv := startServer(b, served.db)
	quoter := srv.client(served.scheduler)
	q := api.QuoteRequest{Machine: "hpc1", User: "amy", Request: charge.Request{Resources: charge.Resources{Processors: 4}, WallclockLimitSeconds: 3600}}
	quotes := func(b *testing.B) []time.Duration {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			r, err := quoter.Quote(context.Background(), q)
			if err != nil || !r.Covered {
				b.Fatalf("quote: %+v, %v", r, err)
			}
			lat = append(lat, time.Since(start))
		}
		return lat
	}
	var idleP99 float64
	b.Run("idle", func(b *testing.B) {
		idleP99 = reportPercentiles(b, "", quotes(b))
	})
	b.Run("load", func(b *testing.B) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		var wg sync.WaitGroup
		var jobs, cycles atomic.Int64
		for range 64 {
			c := loopbackCycler{srv.client(served.scheduler)}
			wg.Go(func() {
				for ctx.Err() == nil && jobs.Load() < maxLoadCycles {
					place, charge := cycleOf(fmt.Sprintf("load-%d", jobs.Add(1)))
					if c.place(place) != nil || c.charge(charge) != nil {
						return
					}
					cycles.Add(1)
				}
			})
		}
		time.Sleep(200 * time.Millisecond) // the load under way
		start, before := time.Now(), cycles.Load()
		lat := quotes(b)
		b.ReportMetric(float64(cycles.Load()-before)/time.Since(start).Seconds(), "load_cycles/s")
		stop()
		wg.Wait()
		if p99 := reportPercentiles(b, "", lat); idleP99 > 0 {
			b.ReportMetric(p99/idleP99, "x_idle_p99")
		}
	})
}
