package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
)

// BenchmarkLoopback drives `ingot serve` (a process of its own, on a real
// bbolt file with fsync) over loopback TCP with 1, 16 and 64 concurrent
// clients, each its own proto/client with its own connection and the
// scheduler's key, each making cycles of distinct jobs: a lien, then a
// final charge (cycleOf). Beside each, in the same run, the same cycles in
// process (lien.Bank Place then Charge, as BenchmarkCycle of package lien)
// from as many goroutines, on a bank made the same way: the machine is
// noisy, so compare the two within one run.
//
// Metrics: cycles/s; p50_ms and p99_ms, the latency of one request (a lien
// or a charge); cycle_p50_ms and cycle_p99_ms, of a whole cycle; cpu_us/op,
// the CPU time of the test process per cycle (in process the bank's and its
// callers'; over loopback the load generator's alone); and, for loopback,
// server_cpu_us/op, the server process's CPU time per cycle;
// x_inprocess, its cycles/s over the in-process figure; and
// x_inprocess_cpu, the server's CPU per cycle over the in-process
// cpu_us/op (issue 41's bar: at most 1.6 at 64 clients). CPU per cycle is
// much steadier than a rate on a shared machine: compare it when making
// either side cheaper. To see where the server's goes, add
// `-args -server.cpuprofile FILE` (docs/performance.md).
//
// "clients=64/tls" is the loopback run of 64 clients against a server of
// its own speaking HTTPS (a certificate of a CA made for the run), beside
// the plain one.
//
// The bar (measured, not asserted; docs/performance.md): at 64 clients, at
// least 5,000 durable cycles/s with p99 ≤ 20 ms on the 2-core development
// machine, the load generator running on the same cores.
func BenchmarkLoopback(b *testing.B) {
	served := newServedBank(b)
	srv := startServer(b, served.db)
	tlsServed := newServedBank(b)
	dir := b.TempDir()
	ca := newTestCA(b, dir)
	certFile, keyFile := ca.issue(b, dir, "server", 2, net.ParseIP("127.0.0.1"), "", time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	tlsSrv := startServer(b, tlsServed.db, "--tls-cert", certFile, "--tls-key", keyFile)
	tlsSrv.roots = x509.NewCertPool()
	tlsSrv.roots.AddCert(ca.cert)
	local := newServedBank(b)
	store, err := boltstore.Open(local.db, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() }) // before the audit of newCLIBank's cleanup
	inProcess := &inProcessCycler{bank: lien.New(l)}

	var jobs atomic.Int64 // job ids stay distinct over every run of every case
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			var local cycleCost
			b.Run("inprocess", func(b *testing.B) {
				local = runCycles(b, slices.Repeat([]cycler{inProcess}, n), &jobs, nil)
			})
			remote := func(name string, srv *serverProcess, bank *servedBank) {
				cyclers := make([]cycler, n)
				for i := range cyclers {
					cyclers[i] = loopbackCycler{srv.client(bank.scheduler)}
				}
				b.Run(name, func(b *testing.B) {
					remote := runCycles(b, cyclers, &jobs, srv)
					if local.rate > 0 {
						b.ReportMetric(remote.rate/local.rate, "x_inprocess")
					}
					if local.cpu > 0 {
						b.ReportMetric(remote.cpu/local.cpu, "x_inprocess_cpu")
					}
				})
			}
			remote("loopback", srv, served)
			if n == 64 {
				remote("tls", tlsSrv, tlsServed)
			}
		})
	}
}

// cycler makes the two requests of a job's cycle for one client.
type cycler interface {
	place(api.LienRequest) error
	charge(api.ChargeRequest) error
}

// inProcessCycler calls the bank directly, each change with a new request
// id, as the server would.
type inProcessCycler struct {
	bank *lien.Bank
	ids  atomic.Int64
}

func (c *inProcessCycler) req() ledger.Request {
	return ledger.Request{Actor: "bench", ID: fmt.Sprint(c.ids.Add(1))}
}

func (c *inProcessCycler) place(spec api.LienRequest) error {
	_, err := c.bank.Place(context.Background(), c.req(), spec)
	return err
}

func (c *inProcessCycler) charge(spec api.ChargeRequest) error {
	_, err := c.bank.Charge(context.Background(), c.req(), spec)
	return err
}

// loopbackCycler sends the requests to the server.
type loopbackCycler struct{ c *client.Client }

func (c loopbackCycler) place(spec api.LienRequest) error {
	_, err := c.c.PlaceLien(context.Background(), "", spec)
	return err
}

func (c loopbackCycler) charge(spec api.ChargeRequest) error {
	_, err := c.c.Charge(context.Background(), "", spec)
	return err
}

// cycleCost is what runCycles measured: cycles a second, and the CPU
// microseconds a cycle of the process that made them (the server's, over
// loopback).
type cycleCost struct{ rate, cpu float64 }

// runCycles makes b.N cycles of new jobs from one goroutine per cycler,
// each cycler used by one goroutine at a time, reports the metrics of
// BenchmarkLoopback and returns what they cost. srv is the server the
// cyclers send to, nil for none.
func runCycles(b *testing.B, cyclers []cycler, jobs *atomic.Int64, srv *serverProcess) cycleCost {
	free := make(chan cycler, len(cyclers))
	for _, c := range cyclers {
		free <- c
	}
	requests := make([]time.Duration, 2*b.N)
	cycles := make([]time.Duration, b.N)
	var slot atomic.Int64
	var serverCPU time.Duration
	if srv != nil {
		serverCPU = srv.cpu()
	}
	cpu := ledgertest.Parallel(b, len(cyclers), func() {
		i := slot.Add(1) - 1
		place, charge := cycleOf(fmt.Sprintf("bench-%d", jobs.Add(1)))
		c := <-free
		defer func() { free <- c }()
		start := time.Now()
		if err := c.place(place); err != nil {
			b.Errorf("lien for job %s: %v", place.ID, err)
			return
		}
		placed := time.Now()
		if err := c.charge(charge); err != nil {
			b.Errorf("charge of job %s: %v", charge.ID, err)
			return
		}
		requests[2*i], requests[2*i+1], cycles[i] = placed.Sub(start), time.Since(placed), time.Since(start)
	})
	if srv != nil {
		cpu = float64((srv.cpu() - serverCPU).Microseconds()) / float64(b.N)
		b.ReportMetric(cpu, "server_cpu_us/op")
	}
	ledgertest.PerSecond(b, "cycles/s")
	reportPercentiles(b, "", requests)
	reportPercentiles(b, "cycle_", cycles)
	return cycleCost{rate: float64(b.N) / b.Elapsed().Seconds(), cpu: cpu}
}

// reportPercentiles reports the median and 99th percentile of ds in
// milliseconds, as prefix+"p50_ms" and prefix+"p99_ms", and returns the
// 99th.
func reportPercentiles(b *testing.B, prefix string, ds []time.Duration) float64 {
	slices.Sort(ds)
	var ms float64
	for _, p := range []float64{50, 99} {
		i := max(0, int(math.Ceil(p/100*float64(len(ds))))-1)
		ms = float64(ds[i].Microseconds()) / 1000
		b.ReportMetric(ms, fmt.Sprintf("%sp%.0f_ms", prefix, p))
	}
	return ms
}
