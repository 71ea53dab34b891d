package outbox_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
)

// BenchmarkPeerAway: a bank's local deposits (16 at a time) while its
// outbox keeps trying a peer that black-holes every connection (accepts,
// never answers) with 100 transactions pending. The baseline, in the same
// run, is the same deposits with no peer and no outbox (local_ops/s); the
// ratio is x_alone (issue 45's bar: at least 0.9).
func BenchmarkPeerAway(b *testing.B) {
	ctx := context.Background()
	hole := blackHole(b)
	bk := ledgertest.NewBank(b, onFile)
	bk.MustNode("chem")
	deposit := func() {
		if _, err := bk.Deposit(ctx, bk.Req(), ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(b, "1")}); err != nil {
			b.Fatal(err)
		}
	}
	alone := ledgertest.RateOf(b, 16, deposit)

	reg := newRegistry(b, bk)
	key, _ := auth.NewKey("away.1")
	if _, _, err := reg.Add(ctx, bk.Req(), peer.Spec{Name: "away", URL: "http://" + hole}, &key); err != nil {
		b.Fatal(err)
	}
	for range 100 {
		if _, err := reg.Deposit(ctx, bk.Req(), "away", ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(b, "1")}); err != nil {
			b.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&outbox.Outbox{Peers: reg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Interval: time.Millisecond, Timeout: 50 * time.Millisecond, Pause: time.Millisecond}).Run(runCtx)
	}()
	b.ResetTimer()
	away := ledgertest.RateOf(b, 16, deposit)
	b.StopTimer()
	stop()
	<-done
	b.ReportMetric(alone, "local_ops/s")
	b.ReportMetric(away, "away_ops/s")
	b.ReportMetric(away/alone, "x_alone")
}

// BenchmarkTraceback: two banks behind their servers on loopback, a
// scheduler of the site making lien + final charge cycles, 1 and 16 jobs
// at a time. cycle: on a project homed at the other bank (each request forwarded
// there, a second hop); its baseline, in the same run, the same cycles on
// a local project (local_cycles/s), the two measured in turns; the cost
// ratio is x_local (issue 45's bar: at most 3). home_away: local cycles,
// 16 at a time, while the home bank black-holes every request (holds it,
// never answers) and the site knows it away (as once a first sending has
// given up), its outbox tries it, and 4 schedulers ask liens of the homed
// project, in all a tenth as many a second as the site makes local
// cycles with the home bank up (awayShare), each as soon as its last was
// answered if that took longer: refused at once, but for one a second,
// sent to try the bank and held until the send gives up (away_liens is
// how many they asked); its baseline, the same local
// cycles with the home bank up and idle (normal_cycles/s), the two
// measured in turns, so that the machine's load moving in the meantime
// cancels out; the ratio is x_normal (bar: at least 0.9).
func BenchmarkTraceback(b *testing.B) {
	ctx := context.Background()
	p := newTracebackPair(b, onFile, "0")
	p.site.MustDeposit("visit", "1000000000", ledgertest.Epoch.AddDate(1, 0, 0))
	p.central.MustDeposit("chem", "1000000000", ledgertest.Epoch.AddDate(1, 0, 0))
	var n atomic.Int64
	cycle := func(project string) func() {
		return func() {
			id := fmt.Sprintf("j%d", n.Add(1))
			if _, err := p.sched.PlaceLien(ctx, "", placeSpec(id, project, 1)); err != nil {
				b.Error(err)
				return
			}
			ch := finalCharge(id, 1)
			ch.Project = project
			if _, err := p.sched.Charge(ctx, "", ch); err != nil {
				b.Error(err)
			}
		}
	}
	// The local and the homed cycles are measured in turns, so that
	// their ratio holds while the machine's other load moves.
	const rounds = 4
	for _, jobs := range []int{1, 16} {
		b.Run(fmt.Sprintf("cycle/jobs=%d", jobs), func(b *testing.B) {
			rates := ledgertest.RatesOf(b, jobs, rounds, cycle("visit.local"), cycle("visit.chem"))
			local, homed := rates[0], rates[1]
			b.ReportMetric(local, "local_cycles/s")
			b.ReportMetric(homed, "homed_cycles/s")
			b.ReportMetric(local/homed, "x_local")
		})
	}
	b.Run("home_away", func(b *testing.B) {
		const schedulers = 4
		every := max(time.Duration(schedulers/awayShare/ledgertest.RateOf(b, 16, cycle("visit.local"))*float64(time.Second)), time.Microsecond)
		var (
			stop  context.CancelFunc
			wg    sync.WaitGroup
			asked atomic.Int64
		)
		away := ledgertest.Turn{
			Enter: func() {
				p.link.mode.Store("hole")
				p.site.peers.Unreachable("central")
				var awayCtx context.Context
				awayCtx, stop = context.WithCancel(ctx)
				wg.Go(func() {
					(&outbox.Outbox{Peers: p.site.peers, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: 50 * time.Millisecond, Pause: time.Millisecond}).Run(awayCtx)
				})
				for range schedulers {
					wg.Go(func() {
						tick := time.NewTicker(every)
						defer tick.Stop()
						for awayCtx.Err() == nil {
							_, _ = p.sched.PlaceLien(awayCtx, "", placeSpec(fmt.Sprintf("away%d", n.Add(1)), "visit.chem", 1))
							asked.Add(1)
							select {
							case <-awayCtx.Done():
							case <-tick.C:
							}
						}
					})
				}
			},
			Leave: func() {
				stop()
				wg.Wait()
				p.link.mode.Store("up")
			},
			Op: cycle("visit.local"),
		}
		rates := ledgertest.RatesIn(b, 16, rounds, ledgertest.Turn{Op: cycle("visit.local")}, away)
		normal, awayRate := rates[0], rates[1]
		b.ReportMetric(normal, "normal_cycles/s")
		b.ReportMetric(awayRate, "away_cycles/s")
		b.ReportMetric(float64(asked.Load()), "away_liens")
		b.ReportMetric(awayRate/normal, "x_normal")
	})
}

// awayShare is the share of the site's jobs that BenchmarkTraceback's
// home_away gives the project homed at the bank away: its schedulers ask
// that many liens of it for each local cycle the site makes with the home
// bank up, on the machine as it is. Slurm asks again a job whose lien was
// refused two minutes later (spec/slurm.md, PrologSlurmctld), so what a
// scheduler asks is the new jobs it starts; asked as fast as they are
// answered, refused at once, they would be a load test of the site's
// server, not of a home bank away (docs/performance.md has both).
const awayShare = 0.1
