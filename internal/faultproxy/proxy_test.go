package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echo starts a server that answers each line with the same line, and
// returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip sends a line through c and reads its echo within timeout.
func roundTrip(c net.Conn, line string, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialRoundTrip connects to the proxy and makes a round trip: the error
// of either (a connection reset at once may fail the connect itself).
func dialRoundTrip(p *Proxy, line string) error {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = roundTrip(c, line, 5*time.Second)
	return err
}

func mustSet(t *testing.T, p *Proxy, d Direction, f Fault, delay time.Duration) {
	t.Helper()
	if err := p.Set(d, f, delay); err != nil {
		t.Fatal(err)
	}
}

// TestForward: without a fault, bytes go both ways, on several
// connections.
func TestForward(t *testing.T) {
	p := newProxy(t)
	for range 3 {
		c := dial(t, p)
		for _, line := range []string{"a", "bb", "ccc"} {
			got, err := roundTrip(c, line, 5*time.Second)
			if err != nil || got != line {
				t.Fatalf("round trip %q: %q, %v", line, got, err)
			}
		}
	}
	if accepted, struck := p.Stats(); accepted != 3 || struck != 0 {
		t.Errorf("stats: %d accepted, %d struck; want 3, 0", accepted, struck)
	}
}

// TestCloseFaults: Drop and Reset, in each direction, on a connection
// open before the fault: the client sees an ordinary close or a reset,
// and in Down the target got the bytes (a request delivered, its answer
// lost). After Heal, new connections go through.
func TestCloseFaults(t *testing.T) {
	for _, tc := range []struct {
		f     Fault
		d     Direction
		reset bool
	}{
		{Drop, Up, false}, {Drop, Down, false}, {Reset, Up, true}, {Reset, Down, true},
	} {
		t.Run(tc.f.String()+"-"+tc.d.String(), func(t *testing.T) {
			p := newProxy(t)
			c := dial(t, p)
			if _, err := roundTrip(c, "before", 5*time.Second); err != nil {
				t.Fatal(err)
			}
			mustSet(t, p, tc.d, tc.f, 0)
			_, err := roundTrip(c, "during", 5*time.Second)
			switch {
			case err == nil:
				t.Fatal("the round trip went through the fault")
			case tc.reset && !errors.Is(err, syscall.ECONNRESET):
				t.Fatalf("got %v, want a reset", err)
			case !tc.reset && !errors.Is(err, io.EOF):
				t.Fatalf("got %v, want an ordinary close", err)
			}
			// A new connection while Up is faulty is closed at once.
			if tc.d == Up {
				if err := dialRoundTrip(p, "new"); err == nil {
					t.Fatal("a new connection went through the fault")
				}
			}
			if _, struck := p.Stats(); struck == 0 {
				t.Error("no fault counted")
			}
			if err := p.Heal(); err != nil {
				t.Fatal(err)
			}
			got, err := roundTrip(dial(t, p), "after", 5*time.Second)
			if err != nil || got != "after" {
				t.Fatalf("after Heal: %q, %v", got, err)
			}
		})
	}
}

// TestDelay: each direction's delay adds to a round trip, and is switched
// off at run time on the same connection.
func TestDelay(t *testing.T) {
	p := newProxy(t)
	c := dial(t, p)
	const delay = 150 * time.Millisecond
	for _, d := range []Direction{Up, Down} {
		mustSet(t, p, d, Delay, delay)
		start := time.Now()
		if got, err := roundTrip(c, "x", 5*time.Second); err != nil || got != "x" {
			t.Fatalf("%s delayed: %q, %v", d, got, err)
		}
		if took := time.Since(start); took < delay {
			t.Errorf("%s delayed by %s: took %s", d, delay, took)
		}
		mustSet(t, p, d, None, 0)
	}
	start := time.Now()
	if _, err := roundTrip(c, "y", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= delay {
		t.Errorf("healed, a round trip took %s", took)
	}
}

// TestBlackHole: in each direction, the connection stays open and nothing
// comes back (the client times out); once healed, the bytes held go on,
// whole and in order. A connection accepted during an Up black hole is
// kept, not closed.
func TestBlackHole(t *testing.T) {
	for _, d := range []Direction{Up, Down} {
		t.Run(d.String(), func(t *testing.T) {
			p := newProxy(t)
			c := dial(t, p)
			mustSet(t, p, d, BlackHole, 0)
			_, err := roundTrip(c, "held", 300*time.Millisecond)
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("through a black hole: %v, want a timeout", err)
			}
			if err := p.Heal(); err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || got != "held\n" {
				t.Fatalf("healed: %q, %v; want the held line", got, err)
			}
		})
	}
	t.Run("new connection", func(t *testing.T) {
		p := newProxy(t)
		mustSet(t, p, Up, BlackHole, 0)
		c := dial(t, p)
		if _, err := roundTrip(c, "x", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("got %v, want a timeout", err)
		}
		if accepted, _ := p.Stats(); accepted != 1 {
			t.Errorf("%d accepted, want 1", accepted)
		}
	})
}

// TestTargetDown: a target that does not listen closes each connection;
// once it listens, connections go through.
func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The proxy first, so that it cannot listen on the target's port.
	p, err := New(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln.Close()
	if err := dialRoundTrip(p, "x"); err == nil {
		t.Fatal("a round trip to a target that is down")
	}
}

// TestClose: Close ends the connections open, held ones included, and a
// closed proxy refuses Set.
func TestClose(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	mustSet(t, p, Down, BlackHole, 0)
	io.WriteString(c, "x\n")
	done := make(chan error, 1)
	go func() {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; errors.Is(err, os.ErrDeadlineExceeded) || err == nil {
		t.Fatalf("a held connection after Close: %v", err)
	}
	if err := p.Set(Up, Drop, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set on a closed proxy: %v", err)
	}
}
