package outbox_test

import (
	"context"
	"io"
	"log/slog"
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
