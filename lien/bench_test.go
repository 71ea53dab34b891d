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
// final charge when it ends, each durable. Distinct jobs run 1 and 64 at a
// time, priced by the default table and ("rated") by a table with a QOS
// multiplier and a night window, as a site's would be; beside each, raw
// bbolt makes the same number of durable writes (two per cycle) in the
// same run.
func BenchmarkCycle(b *testing.B) {
	for _, workers := range []int{1, 64} {
		b.Run(fmt.Sprintf("ingot/goroutines=%d", workers), func(b *testing.B) {
			cycles(b, workers, false)
		})
		b.Run(fmt.Sprintf("ingot-rated/goroutines=%d", workers), func(b *testing.B) {
			cycles(b, workers, true)
		})
		b.Run(fmt.Sprintf("bbolt/goroutines=%d", workers), func(b *testing.B) {
			raw := ledgertest.OpenRawBolt(b)
			value := make([]byte, 1000) // about a lien or charge entry with its records
			ledgertest.Parallel(b, workers, func() {
				for range 2 {
					if err := raw.Put(value, workers > 1); err != nil {
						b.Fatal(err)
					}
				}
			})
			ledgertest.PerSecond(b, "cycles/s")
		})
	}
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
	ledgertest.PerSecond(b, "cycles/s")
}
