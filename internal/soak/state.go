package soak

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// The faults, as the table names them.
const (
	faultKill     = "SIGKILL of ingot serve, restarted"
	faultDisk     = "full disk (tmpfs filled, then freed)"
	faultFsync    = "fsync failure (store stopped, server restarted)"
	faultClockIn  = "client clock jumped within ±5 min"
	faultClockOut = "client clock jumped beyond ±5 min"
	faultFailover = "PostgreSQL primary killed, standby promoted"
	faultDropped  = "answer dropped, change sent again"
	faultResend   = "acknowledged change sent again"
	faultTwice    = "change sent twice at once"
	faultConflict = "request id reused with another body"
)

// stats are the soak's counters, shared by the workers.
type stats struct {
	changes, reads, signIns         atomic.Int64
	readErrors, webErrors           atomic.Int64
	liensPlaced, liensCharged       atomic.Int64
	liensReleased                   atomic.Int64
	clockRefusals                   atomic.Int64
	mu                              sync.Mutex
	faults                          map[string]int
	errors                          map[string]int
	latencies                       []time.Duration // of each request answered 200 (reads, changes, sign-in links)
	longestAck                      time.Duration   // from a change's first sending to its acknowledgement
	loadTime                        time.Duration   // the load's time, checkpoints not counted
	auditsPassed, checkpointsPassed int
}

func (s *stats) fault(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = map[string]int{}
	}
	s.faults[kind]++
}

func (s *stats) countError(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errors == nil {
		s.errors = map[string]int{}
	}
	s.errors[kind]++
}

func (s *stats) errorCount(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors[kind]
}

func (s *stats) latency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, d)
}

// percentile is the p-th percentile (0..1) of the latencies.
func (s *stats) percentile(p float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.latencies) == 0 {
		return 0
	}
	slices.Sort(s.latencies)
	return s.latencies[min(len(s.latencies)-1, int(p*float64(len(s.latencies))))]
}

// allowance says which refusals a fault explains, and until when: a
// fault opens a code while it is on and closes it with a grace, for the
// answers already on their way.
type allowance struct {
	mu    sync.Mutex
	until map[api.Code]time.Time
}

func (a *allowance) open(code api.Code) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.until == nil {
		a.until = map[api.Code]time.Time{}
	}
	a.until[code] = time.Now().Add(24 * time.Hour)
}

func (a *allowance) close(code api.Code, grace time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.until[code] = time.Now().Add(grace)
}

func (a *allowance) ok(code api.Code) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Now().Before(a.until[code])
}

// model is what the acknowledged changes say the bank holds: each
// account's amount, and the final charges that may be refunded.
type model struct {
	mu      sync.Mutex
	amounts map[string]decimal.Decimal
	charges []ledger.Charge // final charges not yet refunded
}

func (m *model) add(account string, d decimal.Decimal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.amounts[account] = m.amounts[account].Add(d)
}

func (m *model) amount(account string) decimal.Decimal {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.amounts[account]
}

// charged keeps a final charge for the admins to refund; the newest
// thousand are kept.
func (m *model) charged(c ledger.Charge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.charges) >= 1000 {
		m.charges = m.charges[1:]
	}
	m.charges = append(m.charges, c)
}

// toRefund takes a charge to refund (each is refunded at most once).
func (m *model) toRefund() (ledger.Charge, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.charges) == 0 {
		return ledger.Charge{}, false
	}
	c := m.charges[0]
	m.charges = m.charges[1:]
	return c, true
}

// gate lets the checkpoints stop the workers between requests: a worker
// enters before each step and leaves after it; pause waits until none is
// in a step, and the workers wait at enter until resume.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	paused  bool
	stopped bool
	active  int
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// enter returns false once the gate is stopped.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.paused && !g.stopped {
		g.cond.Wait()
	}
	if g.stopped {
		return false
	}
	g.active++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	g.cond.Broadcast()
}

// pause waits until no worker is in a step, at most timeout; it reports
// whether they all stopped.
func (g *gate) pause(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	t := time.AfterFunc(timeout, func() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer t.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = true
	for g.active > 0 && time.Now().Before(deadline) {
		g.cond.Wait()
	}
	return g.active == 0
}

func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = false
	g.cond.Broadcast()
}

// stop makes every later enter return false.
func (g *gate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	g.cond.Broadcast()
}
