package soak

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/ingotproc"
	"github.com/ingot-hpc/ingot/internal/lazyfs"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
)

// Config says what a soak runs.
type Config struct {
	// Duration is how long the workload runs, its faults and the
	// checkpoints between them included (set-up and the final checks
	// come on top).
	Duration time.Duration
	// Engine is "bbolt" (a bank file, one server) or "postgres" (a
	// primary with a synchronous standby of internal/pgtest, two servers).
	Engine string
	// Binary is the ingot to run; "" builds ./cmd/ingot into a temporary
	// directory.
	Binary string
	// Dir is where the bbolt bank and the servers' logs go; "" is a
	// temporary directory, removed at the end. Set it to a directory on
	// the disk the bank will live on, to measure that disk.
	Dir string
	// Schedulers, Admins, Readers and WebUsers are how many clients of
	// each kind run at once (defaults 16, 3, 3 and 1).
	Schedulers, Admins, Readers, WebUsers int
	// Rate caps the changes a second, all clients together; 0 lets them
	// go as fast as the bank answers.
	Rate float64
	// Seed seeds the workers' choices.
	Seed uint64
	// Out receives the table.
	Out io.Writer
	// Require makes a fault that cannot be injected here (no root for a
	// tmpfs, no FUSE) fail the soak rather than be left out, as
	// INGOT_E2E=1 asks.
	Require bool
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = 2 * time.Minute
	}
	if c.Engine == "" {
		c.Engine = "bbolt"
	}
	if c.Schedulers == 0 {
		c.Schedulers = 16
	}
	if c.Admins == 0 {
		c.Admins = 3
	}
	if c.Readers == 0 {
		c.Readers = 3
	}
	if c.WebUsers == 0 {
		c.WebUsers = 1
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
}

// run is one soak.
type run struct {
	t       testing.TB
	cfg     Config
	bin     string
	version string // the first line of `ingot version`
	dir     string

	cli       ingotproc.Command // the command line on the bank, for set-up and the final audit
	home      string            // bbolt: the bank's file on the ordinary disk
	db        string            // bbolt: where the bank's file is now
	serverKey string
	pg        *postgres
	servers   []*ingotproc.Server
	keys      map[string]auth.Key
	adminKey  string // its file, for `ingot audit` through a server
	admin     *client.Client
	initial   map[string]decimal.Decimal
	// allocations are each account's first allocation, which deposits
	// top up.
	allocations map[string]uint64

	workers  []*worker
	gate     *gate
	draining atomic.Bool
	allow    allowance
	model    model
	stats    stats
	journal  journalState

	faultsOn atomic.Int32
	// stopped is set while the store must refuse every change (after a
	// failed fsync, until the server is restarted): to the time from
	// which no change sent may be acknowledged.
	stopped atomic.Pointer[time.Time]
	// lastFirst is when the latest first-sent of the acknowledged changes
	// was first sent (Unix ns): a change acknowledged, not answered from
	// its kept answer, since then.
	lastFirst atomic.Int64
	loadStart time.Time
	kills     int

	mu       sync.Mutex
	failures []string
	failed   int
	// The servers' goroutines and heap in use at the last checkpoint,
	// and the most of each seen.
	goroutines, heap       []int64
	maxGoroutines, maxHeap int64
}

// noteServers notes the servers' goroutines and heap in use (from their
// /metrics): goroutines that grow from checkpoint to checkpoint leak.
func (r *run) noteServers() {
	r.goroutines, r.heap = r.goroutines[:0], r.heap[:0]
	for _, s := range r.servers {
		g, h := s.Metrics()
		r.goroutines, r.heap = append(r.goroutines, g), append(r.heap, h)
		r.maxGoroutines, r.maxHeap = max(r.maxGoroutines, g), max(r.maxHeap, h)
	}
}

func (r *run) serversNote() string {
	var parts []string
	for i := range r.goroutines {
		parts = append(parts, fmt.Sprintf("%d goroutines, heap %d MB", r.goroutines[i], r.heap[i]>>20))
	}
	return strings.Join(parts, "; ")
}

// Report is what a soak measured and found.
type Report struct {
	Engine                                string
	Duration, Load                        time.Duration
	Rounds                                int
	Changes, Reads, SignIns, Answered     int64
	P50, P99, Max, LongestAck             time.Duration
	Faults                                map[string]int
	Left                                  []string // faults that could not be injected here, and why
	Acknowledged, Lost, Doubled           int
	Placed, Charged, Released, ActiveLeft int64
	Audits                                int
	MaxGoroutines, MaxHeap                int64
	Errors                                map[string]int
	Failures                              []string
}

// Run runs a soak and returns what it measured; a lost or doubled
// request, a leaked lien, a failed audit or any other failure fails tb.
// It prints the table on cfg.Out.
func Run(tb testing.TB, cfg Config) *Report {
	tb.Helper()
	cfg.defaults()
	r := &run{t: tb, cfg: cfg, bin: cfg.Binary, dir: cfg.Dir, gate: newGate(),
		initial: map[string]decimal.Decimal{}, allocations: map[string]uint64{}}
	r.model.amounts = map[string]decimal.Decimal{}
	if r.dir == "" {
		r.dir = tb.TempDir()
	} else if err := os.MkdirAll(r.dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if r.bin == "" {
		r.bin = ingotproc.Build(tb, tb.TempDir())
	}
	if out, err := (ingotproc.Command{Bin: r.bin}).Run(time.Minute, "version"); err == nil {
		r.version, _, _ = strings.Cut(out, "\n")
	}
	kinds, left := r.faultKinds()
	rep := &Report{Engine: cfg.Engine, Duration: cfg.Duration, Left: left}
	r.setUp()
	r.startWorkers()
	rep.Rounds = r.rounds(kinds)
	r.finish()
	r.report(rep)
	return rep
}

// faultKinds are the faults this engine and machine take, in the order
// the rounds inject them, and those left out, with why.
func (r *run) faultKinds() (kinds, left []string) {
	if r.cfg.Engine == "postgres" {
		return []string{faultKill, faultClockIn, faultFailover}, nil
	}
	kinds = []string{faultKill, faultClockIn}
	if err := probeTmpfs(r.dir); err != nil {
		r.unavailable(&left, faultDisk, err)
	} else {
		kinds = append(kinds, faultDisk)
	}
	if err := probeFUSE(r.dir); err != nil {
		r.unavailable(&left, faultFsync, err)
	} else {
		kinds = append(kinds, faultFsync)
	}
	return kinds, left
}

func (r *run) unavailable(left *[]string, kind string, err error) {
	if r.cfg.Require {
		r.t.Fatalf("soak: %s cannot be injected here (INGOT_E2E=1 requires it): %v", kind, err)
	}
	*left = append(*left, fmt.Sprintf("%s: not injected: %v", kind, err))
}

// probeTmpfs mounts and unmounts a small tmpfs, as the full disk does.
func probeTmpfs(dir string) error {
	mnt, err := os.MkdirTemp(dir, "probe")
	if err != nil {
		return err
	}
	defer os.Remove(mnt)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		return fmt.Errorf("mounting a tmpfs needs root: %w", err)
	}
	return syscall.Unmount(mnt, 0)
}

// probeFUSE mounts and unmounts a lazyfs, as the fsync failure does.
func probeFUSE(dir string) error {
	mnt, err := os.MkdirTemp(dir, "probe")
	if err != nil {
		return err
	}
	defer os.Remove(mnt)
	f, err := lazyfs.Mount(mnt, nil)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("FUSE (/dev/fuse, as root) is needed: %w", err)
		}
		return err
	}
	return f.Unmount()
}

// clientSpecs are the API clients: an admin for the soak's own checks,
// one per worker.
func (r *run) clientSpecs() []clientSpec {
	specs := []clientSpec{{name: "soak-check", role: "admin"}}
	for i := range r.cfg.Schedulers {
		specs = append(specs, clientSpec{name: fmt.Sprintf("sched%d", i), role: "scheduler", scopes: machines})
	}
	for i := range r.cfg.Admins {
		specs = append(specs, clientSpec{name: fmt.Sprintf("admin%d", i), role: "admin"})
	}
	for i := range r.cfg.Readers {
		specs = append(specs, clientSpec{name: fmt.Sprintf("reader%d", i), role: "manager", scopes: []string{"chem", "phys", "bio"}})
	}
	// The web users are amy, who sees chem.lab1 on her page.
	specs = append(specs, clientSpec{name: "amy", role: "user", scopes: []string{"amy"}})
	return specs
}

// setUp makes the bank and starts its servers.
func (r *run) setUp() {
	t := r.t
	keys := filepath.Join(r.dir, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	r.serverKey = filepath.Join(keys, "server.key")
	servers := 1
	var global []string
	switch r.cfg.Engine {
	case "bbolt":
		r.home = filepath.Join(r.dir, "bank.db")
		r.db = r.home
		if _, err := os.Stat(r.home); err == nil {
			t.Fatalf("soak: %s exists: give an empty directory", r.home)
		}
		r.cli = ingotproc.Command{Bin: r.bin, Global: []string{"--db", r.db}}
		global = r.cli.Global
	case "postgres":
		r.pg = startPostgres(t)
		r.cli = ingotproc.Command{Bin: r.bin, Global: []string{"--store", r.pg.current()}}
		global = []string{"--store", r.pg.both()}
		servers = 2
	default:
		t.Fatalf("soak: engine %q: bbolt or postgres", r.cfg.Engine)
	}
	r.keys = setUp(t, r.cli, keys, r.serverKey, r.clientSpecs())
	r.adminKey = filepath.Join(keys, "soak-check.key")
	for i := range servers {
		s := &ingotproc.Server{Name: fmt.Sprintf("ingot serve #%d", i+1), Bin: r.bin, Global: global,
			Flags: []string{"--server-key", r.serverKey}, Log: filepath.Join(r.dir, fmt.Sprintf("serve%d.log", i+1))}
		s.MustStart(t)
		t.Cleanup(func() {
			if s.Running() {
				s.Kill(t)
			}
		})
		r.servers = append(r.servers, s)
	}
	var err error
	r.admin, err = client.New(r.servers[0].URL, r.keys["soak-check"], client.WithRetries(10, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accounts {
		nb, err := r.admin.Balance(background, a)
		if err != nil {
			t.Fatal(err)
		}
		if len(nb.Allocations) != 1 {
			t.Fatalf("soak: %s has %d allocations after set-up, want 1", a, len(nb.Allocations))
		}
		r.initial[a] = nb.Amount
		r.model.amounts[a] = nb.Amount
		r.allocations[a] = nb.Allocations[0].ID
	}
	t.Logf("soak: %s bank set up in %s; %d servers; seed %d", r.cfg.Engine, r.dir, len(r.servers), r.cfg.Seed)
}

// startWorkers starts every worker; they run until finish.
func (r *run) startWorkers() {
	n := 0
	add := func(count int, role string, name func(int) string) {
		for i := range count {
			r.workers = append(r.workers, r.newWorker(n, role, name(i), r.keys[name(i)]))
			n++
		}
	}
	add(r.cfg.Schedulers, "scheduler", func(i int) string { return fmt.Sprintf("sched%d", i) })
	add(r.cfg.Admins, "admin", func(i int) string { return fmt.Sprintf("admin%d", i) })
	add(r.cfg.Readers, "reader", func(i int) string { return fmt.Sprintf("reader%d", i) })
	add(r.cfg.WebUsers, "web", func(int) string { return "amy" })
	r.loadStart = time.Now()
	for _, w := range r.workers {
		w.done = make(chan struct{})
		go w.loop()
	}
}

// maxSteps bounds each worker's loop, beside the soak's time.
const maxSteps = 10_000_000

func (w *worker) loop() {
	defer close(w.done)
	changes := w.role == "scheduler" || w.role == "admin"
	next := time.Now()
	for range maxSteps {
		if w.r.draining.Load() || !w.r.gate.enter() {
			break
		}
		w.step()
		w.r.gate.leave()
		switch {
		case changes && w.r.cfg.Rate > 0:
			// Each change worker takes its share of the rate.
			next = next.Add(time.Duration(float64(w.r.changeWorkers()) / w.r.cfg.Rate * float64(time.Second)))
			time.Sleep(time.Until(next))
		case w.role == "admin":
			time.Sleep(20 * time.Millisecond)
		case w.role == "reader":
			time.Sleep(20 * time.Millisecond)
		case w.role == "web":
			time.Sleep(300 * time.Millisecond)
		}
	}
	if w.role == "scheduler" {
		w.finish()
	}
}

func (r *run) changeWorkers() int { return r.cfg.Schedulers + r.cfg.Admins }

// rounds runs the workload for the configured time, one fault after
// another, with a checkpoint after each; it returns how many rounds ran.
func (r *run) rounds(kinds []string) int {
	rounds := max(len(kinds), min(24, int(r.cfg.Duration/(30*time.Second))))
	start := time.Now()
	var lastCheck time.Duration
	for i := range rounds {
		left := r.cfg.Duration - time.Since(start)
		load := max(left/time.Duration(rounds-i)-lastCheck, 8*time.Second)
		kind := kinds[i%len(kinds)]
		roundStart, changes := time.Now(), r.stats.changes.Load()
		time.Sleep(load * 3 / 10)
		restore := r.inject(kind)
		time.Sleep(time.Until(roundStart.Add(load)))
		checkStart := time.Now()
		changes = r.stats.changes.Load() - changes
		r.checkpoint(fmt.Sprintf("round %d (%s)", i+1, kind), restore)
		lastCheck = time.Since(checkStart)
		r.t.Logf("soak: round %d of %d: %s: %d changes in %s (%.0f/s); checkpoint %s; server: %s",
			i+1, rounds, kind, changes, checkStart.Sub(roundStart).Round(time.Second), float64(changes)/checkStart.Sub(roundStart).Seconds(),
			lastCheck.Round(time.Millisecond), r.serversNote())
	}
	return rounds
}

// checkpoint stops the workers between requests, checks the bank, runs
// restore (which puts the bank back where it lives, after a fault that
// moved it), and lets the workers go on.
func (r *run) checkpoint(when string, restore func()) {
	if !r.gate.pause(maxPending + time.Minute) {
		r.t.Fatalf("soak: %s: the workers did not stop for the checkpoint", when)
	}
	r.stats.mu.Lock()
	r.stats.loadTime += time.Since(r.loadStart)
	r.stats.mu.Unlock()
	r.noteServers()
	r.check(when)
	if restore != nil {
		restore()
	}
	r.loadStart = time.Now()
	r.gate.resume()
}

// finish lets the schedulers end their jobs, checks the bank at the end,
// reads its whole journal again, stops the servers and audits the bank
// without them.
func (r *run) finish() {
	t := r.t
	r.draining.Store(true)
	deadline := time.After(maxPending + time.Minute)
	for _, w := range r.workers {
		select {
		case <-w.done:
		case <-deadline:
			t.Fatalf("soak: worker %s did not finish", w.name)
		}
	}
	r.stats.mu.Lock()
	r.stats.loadTime += time.Since(r.loadStart)
	r.stats.mu.Unlock()
	r.noteServers()
	r.check("at the end")
	r.recount()
	for _, s := range r.servers {
		if err := s.Stop(); err != nil {
			r.failf("stopping %s: %v\n%s", s.Name, err, s.LogTail())
		}
	}
	out, err := r.cli.Run(30*time.Minute, "audit", "--full")
	if err != nil || !strings.Contains(out, "audit: OK") {
		r.failf("ingot audit --full on the stopped bank: %v\n%s", err, out)
	} else {
		r.stats.auditsPassed++
	}
}

// failf records a failure of the soak; the first ones are kept whole.
func (r *run) failf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed++
	if len(r.failures) < 40 {
		r.failures = append(r.failures, msg)
	}
}

// starts is how many times servers have started, to tell a page that a
// restart forgot from a failure.
func (r *run) starts() int {
	n := 0
	for _, s := range r.servers {
		n += s.Starts()
	}
	return n
}

// faultOn reports whether a fault that stops answers is being injected.
func (r *run) faultOn() bool { return r.faultsOn.Load() > 0 }
