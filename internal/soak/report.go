package soak

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report fills rep, prints the table, and fails the test on any failure.
func (r *run) report(rep *Report) {
	s := &r.stats
	rep.Changes, rep.Reads, rep.SignIns = s.changes.Load(), s.reads.Load(), s.signIns.Load()
	rep.P50, rep.P99, rep.Max = s.percentile(0.50), s.percentile(0.99), s.percentile(1)
	s.mu.Lock()
	rep.Answered = int64(len(s.latencies))
	s.mu.Unlock()
	s.mu.Lock()
	rep.Load, rep.LongestAck, rep.Audits = s.loadTime, s.longestAck, s.auditsPassed
	rep.MaxGoroutines, rep.MaxHeap = r.maxGoroutines, r.maxHeap
	rep.Faults, rep.Errors = maps.Clone(s.faults), maps.Clone(s.errors)
	s.mu.Unlock()
	j := &r.journal
	j.mu.Lock()
	rep.Acknowledged, rep.Lost, rep.Doubled = len(j.acked), len(j.lost), len(j.doubled)
	j.mu.Unlock()
	rep.Placed, rep.Charged, rep.Released = s.liensPlaced.Load(), s.liensCharged.Load(), s.liensReleased.Load()
	rep.ActiveLeft = rep.Placed - rep.Charged - rep.Released
	r.mu.Lock()
	rep.Failures = slices.Clone(r.failures)
	failed := r.failed
	r.mu.Unlock()

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	per := func(n int64) string {
		if rep.Load <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f/s", float64(n)/rep.Load.Seconds())
	}
	p("")
	rate := "as fast as the bank answers"
	if r.cfg.Rate > 0 {
		rate = fmt.Sprintf("paced at %.0f changes/s", r.cfg.Rate)
	}
	p("ingot soak: %s, DURATION=%s (load %s in %d rounds, checkpoints apart), %s", rep.Engine, rep.Duration, rep.Load.Round(time.Second), rep.Rounds, rate)
	p("%d schedulers, %d admins, %d readers, %d web user; seed %d", r.cfg.Schedulers, r.cfg.Admins, r.cfg.Readers, r.cfg.WebUsers, r.cfg.Seed)
	p("%s; %s, GOMAXPROCS %d; bank in %s", r.version, host(), runtime.GOMAXPROCS(0), r.where())
	p("")
	p("%-44s %12s %12s", "load held", "count", "rate")
	p("%-44s %12d %12s", "changes acknowledged", rep.Changes, per(rep.Changes))
	p("%-44s %12d %12s", "reads answered", rep.Reads, per(rep.Reads))
	p("%-44s %12d %12s", "web sign-ins", rep.SignIns, per(rep.SignIns))
	p("%-44s %12d %12s", "HTTP requests answered 200, all together", rep.Answered, per(rep.Answered))
	p("%-44s %12s", "latency of answered requests, p50", ms(rep.P50))
	p("%-44s %12s", "p99", ms(rep.P99))
	p("%-44s %12s", "max", ms(rep.Max))
	p("%-44s %12s", "longest from sending to acknowledgement", ms(rep.LongestAck))
	p("%-44s %12d", "most server goroutines at a checkpoint", rep.MaxGoroutines)
	p("%-44s %9d MB", "largest server heap in use at a checkpoint", rep.MaxHeap>>20)
	p("")
	p("%-56s %12s", "faults injected", "count")
	for _, k := range []string{faultKill, faultDisk, faultFsync, faultFailover, faultClockIn, faultClockOut, faultDropped, faultResend, faultTwice, faultConflict} {
		if n, ok := rep.Faults[k]; ok {
			p("%-56s %12d", k, n)
		}
	}
	if n := s.clockRefusals.Load(); n > 0 {
		p("%-56s %12d", "  requests refused for their clock, then sent again", n)
	}
	for _, l := range rep.Left {
		p("%s", l)
	}
	p("")
	p("%-44s %12s", "requests", "count")
	p("%-44s %12d", "acknowledged changes", rep.Acknowledged)
	p("%-44s %12d", "lost (acknowledged, not in the journal)", rep.Lost)
	p("%-44s %12d", "doubled (in the journal twice)", rep.Doubled)
	p("")
	p("liens: %d placed, %d charged, %d released, %d left active at the end", rep.Placed, rep.Charged, rep.Released, rep.ActiveLeft)
	p("ingot audit --full: OK %d times (after each round, at the end, and on the stopped bank)", rep.Audits)
	if len(rep.Errors) > 0 {
		var es []string
		for _, k := range slices.Sorted(maps.Keys(rep.Errors)) {
			es = append(es, fmt.Sprintf("%s %d", k, rep.Errors[k]))
		}
		p("answers that made a client send again: %s", strings.Join(es, ", "))
	}
	if failed == 0 {
		p("result: PASS")
	} else {
		p("result: FAIL (%d failures)", failed)
	}
	if failed > 0 {
		r.keepLogs(p)
	}
	fmt.Fprint(r.cfg.Out, b.String())
	for _, f := range rep.Failures {
		r.t.Errorf("soak: %s", f)
	}
	if failed > len(rep.Failures) {
		r.t.Errorf("soak: and %d more failures", failed-len(rep.Failures))
	}
}

// keepLogs prints the errors the servers logged, and keeps their logs
// where a temporary directory would have removed them.
func (r *run) keepLogs(p func(string, ...any)) {
	keep := ""
	if r.cfg.Dir == "" {
		keep = filepath.Join(os.TempDir(), fmt.Sprintf("ingot-soak-%s-%s", r.cfg.Engine, time.Now().UTC().Format("20060102T150405Z")))
		if err := os.MkdirAll(keep, 0o700); err != nil {
			keep = ""
		}
	}
	for _, s := range r.servers {
		log, err := os.ReadFile(s.Log)
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		var errs []string
		for l := range strings.Lines(string(log)) {
			if !strings.Contains(l, `"level":"ERROR"`) {
				continue
			}
			// The same error of many requests once: without the time and
			// the request's own fields.
			_, msg, _ := strings.Cut(l, `"msg":`)
			if _, e, ok := strings.Cut(msg, `"error":`); ok {
				msg = e
			}
			if !seen[msg] && len(errs) < 10 {
				seen[msg] = true
				errs = append(errs, strings.TrimSpace(l))
			}
		}
		if len(errs) > 0 {
			p("%s logged errors (the first of each kind, at most 10):", s.Name)
			for _, e := range errs {
				p("  %.600s", e)
			}
		}
		if keep != "" {
			dst := filepath.Join(keep, filepath.Base(s.Log))
			if os.WriteFile(dst, log, 0o600) == nil {
				p("%s's log is kept as %s", s.Name, dst)
			}
		}
	}
}

// host is the machine's name and CPU model.
func host() string {
	name, _ := os.Hostname()
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	for l := range strings.Lines(string(cpuinfo)) {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return name + ", " + strings.TrimSpace(v)
		}
	}
	return name
}

// where says where the bank is kept.
func (r *run) where() string {
	if r.pg != nil {
		return "PostgreSQL (a primary and a synchronous standby on this machine), 2 servers"
	}
	return r.home + ", 1 server"
}

// ms is a duration in milliseconds, or seconds beyond 10 s.
func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
