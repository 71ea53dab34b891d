package soak

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/ingotproc"
)

// TestSoak runs the soak on each engine: by default a short one of each
// (make test and CI), or what the environment asks (make soak):
//
//	INGOT_SOAK_DURATION  how long (Go's duration: 2m, 30m)
//	INGOT_SOAK_ENGINE    bbolt or postgres (default: both)
//	INGOT_SOAK_BIN       the ingot binary (default: ./cmd/ingot built here)
//	INGOT_SOAK_DIR       where the bbolt bank lives (default: a temporary directory)
//	INGOT_SOAK_RATE      changes a second to hold (default: as many as the bank
//	                     takes; the short default run holds 200)
//	INGOT_SOAK_SEED      the workers' choices
//
// Under INGOT_E2E=1 a fault that cannot be injected (no root for the
// tmpfs, no FUSE, no PostgreSQL) fails the test; otherwise it is left
// out, or the engine's run skipped, and the table says so.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs servers under load for a minute or more; skipped with -short")
	}
	engines := []string{"bbolt", "postgres"}
	if e := os.Getenv("INGOT_SOAK_ENGINE"); e != "" {
		engines = []string{e}
	}
	// Short by default, and paced, as make test's share beside the other
	// packages' tests: every fault once.
	durations := map[string]time.Duration{"bbolt": 45 * time.Second, "postgres": 30 * time.Second}
	rate := 200.0
	if d := os.Getenv("INGOT_SOAK_DURATION"); d != "" {
		rate = 0
		v, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("INGOT_SOAK_DURATION=%s: %v", d, err)
		}
		for e := range durations {
			durations[e] = v
		}
	}
	cfg := Config{Binary: os.Getenv("INGOT_SOAK_BIN"), Dir: os.Getenv("INGOT_SOAK_DIR"), Out: os.Stdout,
		Require: os.Getenv("INGOT_E2E") == "1", Rate: rate}
	if v := os.Getenv("INGOT_SOAK_RATE"); v != "" {
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("INGOT_SOAK_RATE=%s: %v", v, err)
		}
		cfg.Rate = rate
	}
	if v := os.Getenv("INGOT_SOAK_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("INGOT_SOAK_SEED=%s: %v", v, err)
		}
		cfg.Seed = seed
	}
	// make soak runs go test without its timeout: the soak's own bound,
	// well beyond what its loops allow, dumps every goroutine and stops.
	var limit time.Duration
	for _, e := range engines {
		limit += 2*durations[e] + 20*time.Minute
	}
	watchdog := time.AfterFunc(limit, func() {
		buf := make([]byte, 1<<22)
		fmt.Fprintf(os.Stderr, "soak: still running after %s, which no loop of it allows:\n%s", limit, buf[:runtime.Stack(buf, true)])
		os.Exit(2)
	})
	defer watchdog.Stop()
	if cfg.Binary == "" {
		cfg.Binary = ingotproc.Build(t, t.TempDir())
	}
	dir := cfg.Dir
	for _, e := range engines {
		t.Run(e, func(t *testing.T) {
			c := cfg
			c.Engine, c.Duration = e, durations[e]
			if dir != "" {
				c.Dir = dir + "/" + e
			}
			Run(t, c)
		})
	}
}

// TestCopyFile: the copy that moves a bank reads the same as the file,
// and leaves its blocks of zeros as holes.
func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	data := make([]byte, 3<<20)
	for i := range 4096 {
		data[i] = byte(i) | 1 // a page at the start,
	}
	data[2<<20+17] = 7 // a byte in the middle of zeros, and zeros to the end
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the copy differs")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dst, &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 64<<10 {
		t.Errorf("the copy of two pages of data takes %d bytes", used)
	}
}
