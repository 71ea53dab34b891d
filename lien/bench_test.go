package lien_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
)

// BenchmarkCycle is a job's life in the bank: a lien when it starts and a
// final charge when it ends, each durable. Distinct jobs run 1, 16 and 64
// at a time. Before each run, raw bbolt makes the same number of cycles of
// the nearest thing, two durable writes of about a journal entry and its
// records (through bbolt's DB.Batch where several run at once), and the
// run reports its rate (bbolt_cycles/s) and ingot's as a multiple of it
// (x_bbolt). "rated" prices by a table with a QOS multiplier and a night
// window, as a site's would be.
func BenchmarkCycle(b *testing.B) {
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			cycles(b, workers, false)
		})
	}
	b.Run("rated/goroutines=64", func(b *testing.B) { cycles(b, 64, true) })
}

// cycles runs the lien+charge cycles of BenchmarkCycle.
func cycles(b *testing.B, workers int, rated bool) {
	s := newSite(b)
	s.MustDeposit("chem", "1000000000000", time.Time{})
	if rated {
		table := charge.DefaultRateTable()
		table.Rates = append(table.Rates, charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: "premium", Rate: dec("2")},
			charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: "*", Rate: dec("1")})
		table.TimeOfDay = []charge.TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: dec("0.5")}}
		if _, err := s.lb.SetRates(context.Background(), s.Req(), table); err != nil {
			b.Fatal(err)
		}
	}
	raw := ledgertest.OpenRawBolt(b)
	value := make([]byte, 1000) // about a lien or charge entry with its records
	baseline := ledgertest.RateOf(b, workers, func() {
		for range 2 {
			if err := raw.Put(value, workers > 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	var next atomic.Int64
	ledgertest.Parallel(b, workers, func() {
		id := fmt.Sprint(next.Add(1))
		// The lien starts with the job, as a scheduler's placed at job
		// start does.
		spec := lien.PlaceSpec{Job: job(id), User: "amy", Request: withStart(request(4, 3600), s.Clock.Now())}
		if _, err := s.lb.Place(context.Background(), s.Req(), spec); err != nil {
			b.Fatal(err)
		}
		u := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 1800, WallclockLimitSeconds: 3600,
			State: charge.Completed, Start: s.Clock.Now()}
		if _, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job(id), Usage: u}); err != nil {
			b.Fatal(err)
		}
	})
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "cycles/s")
	b.ReportMetric(baseline, "bbolt_cycles/s")
	b.ReportMetric(rate/baseline, "x_bbolt")
}
