package ledgertest

import (
	"encoding/binary"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/runtimetune"
)

// Benchmarks print ingot's figures beside raw bbolt doing the nearest thing
// in the same run, so that the ratio holds on a noisy machine. These are
// their shared pieces.

// Parallel runs op b.N times over n goroutines, timing only that. It
// first has the kernel write out every file's dirty pages, so that what the
// setup or an earlier benchmark wrote does not compete with the run's syncs
// for the disk. The run has Go's runtime set as `ingot serve` sets it
// (runtimetune), so that an in-process bank is measured as it is served; the
// same goes for what runs beside it in the process (a load generator, raw
// bbolt), so that ratios compare like with like.
func Parallel(b *testing.B, n int, op func()) {
	var next atomic.Int64
	done := make(chan struct{})
	defer runtimetune.Apply()()
	syscall.Sync()
	b.ResetTimer()
	cpu := processCPU()
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
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu_us/op")
}

// processCPU is the CPU time (user and system) the process has used so
// far. Per operation it is a steadier figure than a rate on a shared
// machine, whose speed drifts from run to run: it is what to compare when
// making the bank cheaper.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
