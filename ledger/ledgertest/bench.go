package ledgertest

import (
	"encoding/binary"
	"path/filepath"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Benchmarks print ingot's figures beside raw bbolt doing the nearest thing
// in the same run, so that the ratio holds on a noisy machine. These are
// their shared pieces.

// Parallel runs op b.N times over n goroutines, timing only that. It
// first has the kernel write out every file's dirty pages, so that what the
// setup or an earlier benchmark wrote does not compete with the run's syncs
// for the disk. The run has Go's runtime set as `ingot serve` sets it
// same goes for what runs beside it in the process (a load generator, raw
// bbolt), so that ratios compare like with like. It returns the cpu_us/op
// it reports, for a benchmark that sets it beside another process's.
func Parallel(b *testing.B, n int, op func()) float64 {
	var next atomic.Int64
	done := make(chan struct{})
	syscall.Sync()
	b.ResetTimer()
	cpu, gc := processCPU(), gcCPU()
	for g := 0; g < n; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for next.Add(1) <= int64(b.N) {
				op()
			}
		}()
	}
	for g := 0; g < n; g++ {
		<-done
	}
	b.StopTimer()
	used := processCPU().minus(cpu)
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(perOp(used.user+used.system), "cpu_us/op")
	b.ReportMetric(perOp(used.system), "sys_us/op")
	b.ReportMetric(perOp(gcCPU()-gc), "gc_us/op")
	b.ReportMetric(float64(used.faults)/float64(b.N), "faults/op")
	return perOp(used.user + used.system)
}

// cpuTimes is the CPU time a process used, in user space and in the
// kernel for it, and the page faults it took. Per operation it is a steadier
// figure than a rate on a shared machine, whose speed drifts from run to
// run: it is what to compare when making the bank cheaper. The kernel's
// share shows what system calls cost (bbolt's page writes and syncs,
// waking goroutines' threads) and what first touches of memory cost.
type cpuTimes struct {
	user, system time.Duration
	faults       int64
}

func (c cpuTimes) minus(d cpuTimes) cpuTimes {
	return cpuTimes{user: c.user - d.user, system: c.system - d.system, faults: c.faults - d.faults}
}

// processCPU is the CPU time the process has used so far.
func processCPU() cpuTimes {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}
	}
	return cpuTimes{user: time.Duration(ru.Utime.Nano()), system: time.Duration(ru.Stime.Nano()), faults: ru.Minflt + ru.Majflt}
}

// gcCPU is the runtime's estimate of the CPU time the garbage collector has
// used so far (its background workers, assists and pauses).
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// RateOf runs op b.N times over n goroutines, outside the timed part, and
// returns how many ran a second: a baseline done as often as the measured
// operation, in the same run.
func RateOf(b *testing.B, n int, op func()) float64 {
	return RatesOf(b, n, 1, op)[0]
}

// CostOf is RateOf with the process's CPU time an operation took, in
// microseconds (Parallel's cpu_us/op): a baseline that a busy machine
// moves less than the rate.
func CostOf(b *testing.B, n int, op func()) (rate, cpuPerOp float64) {
	cpu := processCPU()
	rate = RateOf(b, n, op)
	used := processCPU().minus(cpu)
	return rate, float64((used.user + used.system).Microseconds()) / float64(b.N)
}

// RatesOf runs each op b.N times over n goroutines, outside the timed
// part, in turns (rounds of b.N/rounds runs of each op, one op after the
// other), and returns how many of each ran a second. Measured in turns,
// the ops share the machine's other load as it comes and goes, so that
// their ratio holds on a busy machine where two measures one after the
// other would each catch a different load.
func RatesOf(b *testing.B, n, rounds int, ops ...func()) []float64 {
	turns := make([]Turn, len(ops))
	for i, op := range ops {
		turns[i].Op = op
	}
	return RatesIn(b, n, rounds, turns...)
}

// A Turn is what RatesIn measures in turns: Op, run in the state that
// Enter sets up and Leave ends (nil: none), each called at every round,
// untimed.
type Turn struct {
	Enter, Leave func()
	Op           func()
}

// RatesIn is RatesOf for ops each run in a state of its own: the same op
// with a peer up and away, say.
func RatesIn(b *testing.B, n, rounds int, turns ...Turn) []float64 {
	b.StopTimer()
	defer b.StartTimer()
	took := make([]time.Duration, len(turns))
	for r := range rounds {
		count := b.N / rounds
		if r < b.N%rounds { // the remainder, one a round
			count++
		}
		for i, turn := range turns {
			if turn.Enter != nil {
				turn.Enter()
			}
			took[i] += timeRuns(n, count, turn.Op)
			if turn.Leave != nil {
				turn.Leave()
			}
		}
	}
	rates := make([]float64, len(turns))
	for i, d := range took {
		rates[i] = float64(b.N) / d.Seconds()
	}
	return rates
}

// timeRuns runs op count times over n goroutines and says how long they
// took, once the kernel has written out every file's dirty pages.
func timeRuns(n, count int, op func()) time.Duration {
	var next atomic.Int64
	done := make(chan struct{})
	syscall.Sync()
	start := time.Now()
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			for next.Add(1) <= int64(count) {
				op()
			}
		}()
	}
	for range n {
		<-done
	}
	return time.Since(start)
}

// PerSecond reports b.N over the elapsed time in the given unit.
func PerSecond(b *testing.B, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

// RawBolt is a bbolt database with one bucket "b".
type RawBolt struct {
	DB  *bolt.DB
	key atomic.Uint64
}

// OpenRawBolt opens a raw bbolt baseline in the benchmark's temporary
// directory.
func OpenRawBolt(b *testing.B) *RawBolt {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		b.Fatal(err)
	}
	return &RawBolt{DB: db}
}

// Put makes one durable write of value under a new key: alone in its
// transaction with one writer, through bbolt's own Batch with several.
func (r *RawBolt) Put(value []byte, concurrent bool) error {
	k := binary.BigEndian.AppendUint64(nil, r.key.Add(1))
	put := func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put(k, value) }
	if concurrent {
		return r.DB.Batch(put)
	}
	return r.DB.Update(put)
}
