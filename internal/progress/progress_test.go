package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// clock is a clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestLinesWhenNotATerminal: a line per interval with the rate and the
// time left, none in between (and none for work shorter than one).
func TestLinesWhenNotATerminal(t *testing.T) {
	var out bytes.Buffer
	c := &clock{time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	m := newMeter(&out, "audit", "entries", 1000, false, DefaultInterval, c.now)
	c.t = c.t.Add(5 * time.Second)
	m.Set(100) // before the interval: nothing
	c.t = c.t.Add(5 * time.Second)
	m.Set(200)
	c.t = c.t.Add(DefaultInterval)
	m.Set(400)
	m.Stop()
	m.Set(500) // after Stop: nothing
	want := "audit: 200 of 1000 entries (20%), 20/s, 40s left\n" +
		"audit: 400 of 1000 entries (40%), 20/s, 30s left\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestTerminalRedraws: on a terminal the line is redrawn in place, with a
// bar, and cleared at the end; work of unknown size shows its count.
func TestTerminalRedraws(t *testing.T) {
	var out bytes.Buffer
	c := &clock{time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	m := newMeter(&out, "backup", "bytes", 0, true, redraw, c.now)
	if out.Len() != 0 {
		t.Errorf("a terminal meter wrote %q at its start", out.String())
	}
	c.t = c.t.Add(time.Second)
	w := &Writer{W: &bytes.Buffer{}, Report: m.Set}
	w.Write(make([]byte, 4096))
	m.Stop()
	if got := out.String(); got != "\r\033[Kbackup: 4096 bytes, 4096/s\r\033[K" {
		t.Errorf("got %q", got)
	}
	out.Reset()
	m = newMeter(&out, "audit", "entries", 10, true, redraw, c.now)
	c.t = c.t.Add(time.Second)
	m.Set(5)
	if !strings.Contains(out.String(), "[==========          ] 5 of 10 entries (50%), 5/s, 1s left") {
		t.Errorf("got %q", out.String())
	}
}
