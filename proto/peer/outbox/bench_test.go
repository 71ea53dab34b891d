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
// ratio is x_local (issue 45's bar: at most 3). home_away: local cycles, 16 at a time, while 4
// schedulers keep asking liens of the homed project of a home bank that
// black-holes them (each held until the send gives up) and the outbox
// tries it; its baseline the same local cycles, 16 at a time, with the
// home bank up and idle, measured before and after (normal_cycles/s, their
// mean, so that the machine's load moving in the meantime cancels out);
// the ratio is x_normal (bar: at least 0.9).
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
		before := ledgertest.RateOf(b, 16, cycle("visit.local"))
		p.link.mode.Store("hole")
		awayCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for awayCtx.Err() == nil {
					_, _ = p.sched.PlaceLien(awayCtx, "", placeSpec(fmt.Sprintf("away%d", n.Add(1)), "visit.chem", 1))
				}
			})
		}
		wg.Go(func() {
			(&outbox.Outbox{Peers: p.site.peers, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: 50 * time.Millisecond, Pause: time.Millisecond}).Run(awayCtx)
		})
		away := ledgertest.RateOf(b, 16, cycle("visit.local"))
		stop()
		wg.Wait()
		p.link.mode.Store("up")
		normal := (before + ledgertest.RateOf(b, 16, cycle("visit.local"))) / 2
		b.ReportMetric(normal, "normal_cycles/s")
		b.ReportMetric(away, "away_cycles/s")
		b.ReportMetric(away/normal, "x_normal")
	})
}
