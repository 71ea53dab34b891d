package lien_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/boltfile"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
)

// BenchmarkHistory builds banks of lien + charge cycles (two journal
// entries each) of growing size and reports, for each, what a long
// history costs: the file's bytes per cycle, what a compacted copy keeps
// a cycle once the answers kept for retries are dropped, a full audit's
// time and peak heap, an incremental audit's time after newCycles more
// cycles, the last five journal entries of a project and a month's
// statement, a job's entries and the deposits (journal --job, --kind;
// the median of queryRuns runs each), and opening the file
// cold and warm. The cycles are made a
// month at a time (cyclesPerMonth), the clock moved a month after each,
// and the answers older than the retention dropped as `ingot serve` drops
// them: a month's statement and the incremental audit then cover the same
// number of cycles whatever the size, so that what grows with the history
// shows. Run with `make bench-history`; INGOT_HISTORY_CYCLES (default
// "50000,500000": banks of 100,000 and 1,000,000 journal entries) sets
// the sizes. Each size runs once (-benchtime 1x): the figures are the
// report, and the sizes side by side show what grows.
func BenchmarkHistory(b *testing.B) {
	sizes := []int{50000, 500000}
	if v := os.Getenv("INGOT_HISTORY_CYCLES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("INGOT_HISTORY_CYCLES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, cycles := range sizes {
		b.Run(fmt.Sprintf("cycles=%d", cycles), func(b *testing.B) { history(b, cycles) })
	}
}

// newCycles are the cycles an incremental audit of BenchmarkHistory
// checks (issue 24's bar: at most a second for 10,000), and
// cyclesPerMonth those of each month of its banks.
const (
	newCycles      = 10000
	cyclesPerMonth = 5000
)

func history(b *testing.B, cycles int) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "bank.db")
	s, store := siteOnFile(b, path)
	s.MustDeposit("chem", "1000000000000000", time.Time{})
	var next atomic.Int64
	build := func(n int) time.Duration {
		start := time.Now()
		for done := 0; done < n; done += cyclesPerMonth {
			if next.Load() > 0 {
				// A month on (more than any month's days, so that a
				// month's statement holds one month's cycles).
				s.Clock.Advance(32 * 24 * time.Hour)
				if _, err := s.PruneRequests(ctx, s.Clock.Now().Add(-ledger.RequestRetention), 1<<30); err != nil {
					b.Fatal(err)
				}
			}
			buildCycles(b, s, &next, min(cyclesPerMonth, n-done))
		}
		return time.Since(start)
	}
	built := build(cycles)
	b.ReportMetric(float64(cycles)/built.Seconds(), "build_cycles/s")
	b.ReportMetric(float64(pagesInUse(b, path))/float64(cycles), "file_bytes/cycle")
	took, heap := withPeakHeap(func() error {
		rep, err := s.Audit(ctx, ledger.AuditOptions{Full: true})
		if err == nil && len(rep.Problems) > 0 {
			err = fmt.Errorf("audit: %v", rep.Problems)
		}
		return err
	}, b)
	b.ReportMetric(took.Seconds(), "full_audit_s")
	b.ReportMetric(float64(heap)/(1<<20), "full_audit_peak_heap_MB")
	build(newCycles)
	took, _ = withPeakHeap(func() error { _, err := s.Audit(ctx, ledger.AuditOptions{}); return err }, b)
	b.ReportMetric(took.Seconds()*1000, "incremental_audit_ms")
	last5 := medianOf(queryRuns, func() {
		if es, err := s.Journal(ctx, ledger.JournalFilter{Node: "chem.lab1", Limit: 5}); err != nil || len(es) != 5 {
			b.Fatalf("journal: %d entries, %v", len(es), err)
		}
	})
	b.ReportMetric(float64(last5.Microseconds())/1000, "journal_last5_ms")
	// A job from the middle of the history (journal --job): its lien and
	// its charge, through the index.
	byJob := medianOf(queryRuns, func() {
		if es, err := s.Journal(ctx, ledger.JournalFilter{Job: fmt.Sprint("h", cycles/2)}); err != nil || len(es) != 2 {
			b.Fatalf("journal of a job: %d entries, %v; want its lien and charge", len(es), err)
		}
	})
	b.ReportMetric(float64(byJob.Microseconds())/1000, "journal_job_ms")
	byKind := medianOf(queryRuns, func() {
		if es, err := s.Journal(ctx, ledger.JournalFilter{Kinds: []ledger.Kind{ledger.KindDeposit}}); err != nil || len(es) != 1 {
			b.Fatalf("journal of deposits: %d entries, %v; want the one", len(es), err)
		}
	})
	b.ReportMetric(float64(byKind.Microseconds())/1000, "journal_deposits_ms")
	now := s.Clock.Now()
	statement := medianOf(queryRuns, func() {
		if st, err := s.Statement(ctx, "chem", now.AddDate(0, -1, 0), now.Add(time.Second), false); err != nil || len(st.DebitLines) != cyclesPerMonth {
			b.Fatalf("statement of the last month: %d charges, %v; want the month's %d", len(st.DebitLines), err, cyclesPerMonth)
		}
	})
	b.ReportMetric(float64(statement.Microseconds())/1000, "statement_month_ms")
	cold, warm := openTimes(b, store)
	b.ReportMetric(float64(cold.Microseconds())/1000, "open_cold_ms")
	b.ReportMetric(float64(warm.Microseconds())/1000, "open_warm_ms")
	b.ReportMetric(float64(keptBytes(b, s, store))/float64(cycles+newCycles), "kept_bytes/cycle")
}

// queryRuns is how many times BenchmarkHistory runs each query, and
// opens the file: it reports the median, as a query's time on a shared
// machine varies from one run to the next.
const queryRuns = 5

// medianOf is the median time of n runs of fn.
func medianOf(n int, fn func()) time.Duration {
	return median(n, func() time.Duration {
		start := time.Now()
		fn()
		return time.Since(start)
	})
}

// median is the median of n times that fn measures.
func median(n int, fn func() time.Duration) time.Duration {
	took := make([]time.Duration, n)
	for i := range took {
		took[i] = fn()
	}
	slices.Sort(took)
	return took[n/2]
}

// buildCycles makes n lien + charge cycles from 64 goroutines, their jobs
// numbered after next.
func buildCycles(b *testing.B, s *site, next *atomic.Int64, n int) {
	ctx := context.Background()
	last := next.Load() + int64(n)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for id := next.Add(1); id <= last; id = next.Add(1) {
				j := job(fmt.Sprint("h", id))
				spec := lien.PlaceSpec{Job: j, User: "amy", Request: withStart(request(4, 3600), s.Clock.Now())}
				if _, err := s.lb.Place(ctx, s.Req(), spec); err != nil {
					b.Error(err)
					return
				}
				u := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 1800, WallclockLimitSeconds: 3600,
					State: charge.Completed, Start: s.Clock.Now()}
				if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: j, Usage: u}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// keptBytes is the bytes of the pages of a compacted copy (backup --compact) of the bank
// in store once the answers kept for retries are dropped, as the server
// drops them when they are older than the retention (ledger's
// RequestRetention): what the bank's history keeps for good.
func keptBytes(b *testing.B, s *site, store *boltstore.Store) int64 {
	ctx := context.Background()
	for {
		n, err := s.PruneRequests(ctx, s.Clock.Now().Add(time.Second), 10000)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "copy.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := store.Backup(ctx, f); err != nil {
		b.Fatal(err)
	}
	compact := filepath.Join(dir, "compact.db")
	if err := boltfile.Compact(compact, f.Name()); err != nil {
		b.Fatal(err)
	}
	return pagesInUse(b, compact)
}

// openTimes copies the bank in store and times opening the copy as a
// command does (the store, then the ledger on it): first with none of the
// file in the page cache (dropped with posix_fadvise, which needs no
// privilege), then again with it cached. The copy stands in for the bank
// itself, which this process holds open.
func openTimes(b *testing.B, store *boltstore.Store) (cold, warm time.Duration) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "copy.db")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := store.Backup(ctx, f); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	open := func() time.Duration {
		start := time.Now()
		st, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		if _, err := ledger.Open(ctx, st); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	cold = median(queryRuns, func() time.Duration {
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			b.Fatal(err)
		}
		return open()
	})
	return cold, median(queryRuns, open)
}

// pagesInUse is the bytes of the pages bbolt uses in the file at path
// (its high-water page times the page size, from the first meta page):
// the file itself grows ahead of them.
func pagesInUse(b *testing.B, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	meta := make([]byte, 16+64)
	if _, err := f.ReadAt(meta, 0); err != nil {
		b.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint32(meta[16+8:])) * int64(binary.LittleEndian.Uint64(meta[16+40:]))
}

// withPeakHeap runs fn and returns how long it took and the most heap in
// use while it ran (sampled every 10 ms).
func withPeakHeap(fn func() error, b *testing.B) (time.Duration, uint64) {
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	err := fn()
	took := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		b.Fatal(err)
	}
	return took, peak.Load()
}
