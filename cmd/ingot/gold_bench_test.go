package main

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
)

// BenchmarkGold drives `ingot serve` (a process of its own, on a real
// bbolt file with fsync) over loopback TCP with 1, 4 and 16 concurrent
// connections making cycles of distinct jobs, a reservation then a final
// charge (cycleOf), once over the JSON API and once over the Gold
// listener, in the same run against the same server: the machine is
// noisy, so compare the two within one run. Gold's protocol takes one
// connection per request, as its clients and Maui open them; the JSON
// clients keep theirs open.
//
// Metrics as BenchmarkLoopback's: cycles/s; p50_ms and p99_ms, the
// latency of one request; cycle_p50_ms and cycle_p99_ms, of a cycle;
// server_cpu_us/op, the server's CPU time a cycle; and for Gold x_json,
// its cycles/s over the JSON API's.
//
// The bar (measured, not asserted; docs/performance.md): at least 1,000
// cycles/s at 16 connections on the 2-core development machine.
func BenchmarkGold(b *testing.B) {
	served := newServedBank(b)
	key := goldKey(b, served.cliBank, "maui", "--role", "scheduler", "--scope", "hpc1")
	srv := startServer(b, served.db, "--gold-listen", "127.0.0.1:0")
	addr := srv.line("gold listening on ")
	var jobs atomic.Int64 // job ids stay distinct over every run of every case
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("connections=%d", n), func(b *testing.B) {
			var jsonRate float64
			b.Run("json", func(b *testing.B) {
				cyclers := make([]cycler, n)
				for i := range cyclers {
					cyclers[i] = loopbackCycler{srv.client(served.scheduler)}
				}
				jsonRate = runCycles(b, cyclers, &jobs, srv).rate
			})
			b.Run("gold", func(b *testing.B) {
				cyclers := make([]cycler, n)
				for i := range cyclers {
					cyclers[i] = goldCycler{goldClient{addr: addr, key: key, actor: "maui"}}
				}
				rate := runCycles(b, cyclers, &jobs, srv).rate
				if jsonRate > 0 {
					b.ReportMetric(rate/jsonRate, "x_json")
				}
			})
		})
	}
}

// goldCycler makes a job's cycle with Gold's requests, as Maui sends them.
type goldCycler struct{ g goldClient }

func (c goldCycler) place(spec api.LienRequest) error {
	return c.ok(c.g.do("Reserve", "Job", goldOption("WallDuration", strconv.FormatInt(spec.Request.WallclockLimitSeconds, 10)),
		goldData("Job", "JobId", spec.ID, "MachineName", spec.Machine, "UserId", spec.User, "Processors", strconv.FormatInt(spec.Request.Processors, 10))))
}

func (c goldCycler) charge(spec api.ChargeRequest) error {
	return c.ok(c.g.do("Charge", "Job", goldData("Job", "JobId", spec.ID, "MachineName", spec.Machine,
		"Processors", strconv.FormatInt(spec.Usage.Processors, 10), "WallDuration", strconv.FormatInt(spec.Usage.WallclockSeconds, 10))))
}

func (goldCycler) ok(r goldReply, err error) error {
	if err == nil && r.Code != "000" {
		err = fmt.Errorf("%s %s", r.Code, r.Message)
	}
	return err
}
