package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultInterval is how often a Meter writes a line when its writer is
// not a terminal, unless INGOT_PROGRESS_INTERVAL (a Go duration, such as
// 1m) says otherwise. Work shorter than it writes nothing.
const DefaultInterval = 10 * time.Second

// interval is INGOT_PROGRESS_INTERVAL, or DefaultInterval.
func interval() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("INGOT_PROGRESS_INTERVAL")); err == nil && d > 0 {
		return d
	}
	return DefaultInterval
}

// redraw is how often a Meter redraws its line on a terminal.
const redraw = 200 * time.Millisecond

// Meter reports the progress of one piece of work on a writer. Its methods
// are safe for concurrent use.
type Meter struct {
	w        io.Writer
	what     string // "audit"
	unit     string // "entries"
	total    int64  // 0: not known
	terminal bool
	every    time.Duration
	now      func() time.Time

	mu      sync.Mutex
	start   time.Time
	shown   time.Time // when the last line was written
	done    int64
	drawn   bool // a line is on the terminal, to clear at the end
	stopped bool
}

// New starts a meter of work called what, counted in unit, of total units
// (0 when not known), on w: a terminal if w is a character device.
func New(w io.Writer, what, unit string, total int64) *Meter {
	terminal := isTerminal(w)
	every := interval()
	if terminal {
		every = redraw
	}
	return newMeter(w, what, unit, total, terminal, every, time.Now)
}

func newMeter(w io.Writer, what, unit string, total int64, terminal bool, every time.Duration, now func() time.Time) *Meter {
	start := now()
	return &Meter{w: w, what: what, unit: unit, total: total, terminal: terminal, every: every, now: now, start: start, shown: start}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Set says that done units are done, and shows it if it is time to.
func (m *Meter) Set(done int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.done = done
	now := m.now()
	if now.Sub(m.shown) < m.every {
		return
	}
	m.shown = now
	if m.terminal {
		fmt.Fprintf(m.w, "\r\033[K%s", m.line(now))
		m.drawn = true
		return
	}
	fmt.Fprintln(m.w, m.line(now))
}

// Add says that n more units are done.
func (m *Meter) Add(n int64) {
	m.mu.Lock()
	done := m.done + n
	m.mu.Unlock()
	m.Set(done)
}

// Stop ends the meter: on a terminal it clears its line, for the
// command's summary.
func (m *Meter) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drawn {
		fmt.Fprint(m.w, "\r\033[K")
	}
	m.stopped = true
}

// line is the meter's state: what, how much of how much, the rate and the
// time left.
func (m *Meter) line(now time.Time) string {
	var b strings.Builder
	elapsed := now.Sub(m.start)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(m.done) / elapsed.Seconds()
	}
	fmt.Fprintf(&b, "%s: ", m.what)
	if m.total > 0 {
		pct := min(100, 100*m.done/m.total)
		if m.terminal {
			const width = 20
			filled := int(pct * width / 100)
			fmt.Fprintf(&b, "[%s%s] ", strings.Repeat("=", filled), strings.Repeat(" ", width-filled))
		}
		fmt.Fprintf(&b, "%d of %d %s (%d%%)", m.done, m.total, m.unit, pct)
	} else {
		fmt.Fprintf(&b, "%d %s", m.done, m.unit)
	}
	fmt.Fprintf(&b, ", %.0f/s", rate)
	if m.total > 0 && rate > 0 && m.done < m.total {
		left := time.Duration(float64(m.total-m.done) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", %s left", left.Round(time.Second))
	}
	return b.String()
}

// Writer counts the bytes written through it to W, and tells Report (if
// set: a Meter's Set, say) the count after each write.
type Writer struct {
	W      io.Writer
	Report func(written int64)
	n      int64
}

func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.W.Write(p)
	w.n += int64(n)
	if w.Report != nil {
		w.Report(w.n)
	}
	return n, err
}

// N is how many bytes were written through w.
func (w *Writer) N() int64 { return w.n }

// Steps shows work done in named steps (an archive's audit, copy and
// audit again), a meter a step: a step's first report starts its meter
// and stops the one before.
type Steps struct {
	w    io.Writer
	what string
	step string
	m    *Meter
}

// NewSteps shows the steps of work called what on w.
func NewSteps(w io.Writer, what string) *Steps { return &Steps{w: w, what: what} }

// Set says that done of total units of step are done.
func (s *Steps) Set(step, unit string, done, total int64) {
	if s.m == nil || step != s.step {
		s.Stop()
		s.step, s.m = step, New(s.w, s.what+": "+step, unit, total)
	}
	s.m.Set(done)
}

// Stop ends the meter of the step under way.
func (s *Steps) Stop() {
	if s.m != nil {
		s.m.Stop()
	}
}
