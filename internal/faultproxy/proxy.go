package faultproxy

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction is one way of a proxied connection.
type Direction int

// The directions: Up carries what the connecting side sends to the
// target, Down the target's answers.
const (
	Up Direction = iota
	Down
)

func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// Fault is what a direction does to the bytes it carries.
type Fault int

// The faults (see the package's doc).
const (
	None Fault = iota
	Drop
	Reset
	Delay
	BlackHole
)

// Faults are the faults other than None, for a test that picks one.
var Faults = []Fault{Drop, Reset, Delay, BlackHole}

func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case Drop:
		return "drop"
	case Reset:
		return "reset"
	case Delay:
		return "delay"
	case BlackHole:
		return "black-hole"
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// Proxy forwards the connections it accepts to a target, with a fault in
// each direction.
type Proxy struct {
	ln     net.Listener
	target string

	mu sync.Mutex
	// faults and delays are each direction's fault, and the pause of
	// Delay; changed is closed (and replaced) at each Set, to wake the
	// bytes a black hole holds.
	faults  [2]Fault
	delays  [2]time.Duration
	changed chan struct{}
	conns   map[*link]struct{}
	closed  bool
	// accepted counts the connections; struck, the times a fault acted
	// on one (a connection closed, reset, or bytes delayed or held).
	accepted, struck int
	wg               sync.WaitGroup
}

// New starts a proxy on a free loopback port that forwards to target
// (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set gives direction d the fault f; delay is Delay's pause (ignored by
// the others). It acts on the next bytes every connection carries that
// way, those open now included.
func (p *Proxy) Set(d Direction, f Fault, delay time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.faults[d], p.delays[d] = f, delay
	close(p.changed)
	p.changed = make(chan struct{})
	return nil
}

// Heal removes the faults of both directions.
func (p *Proxy) Heal() error {
	if err := p.Set(Up, None, 0); err != nil {
		return err
	}
	return p.Set(Down, None, 0)
}

// Stats says how many connections the proxy accepted and how many times
// a fault acted on one.
func (p *Proxy) Stats() (accepted, struck int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.struck
}

// Close stops accepting, closes every connection, and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	close(p.changed)
	for l := range p.conns {
		l.close(false)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// fault is direction d's fault now, with Delay's pause and the channel
// the next Set closes.
func (p *Proxy) fault(d Direction) (Fault, time.Duration, <-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults[d], p.delays[d], p.changed, p.closed
}

func (p *Proxy) strike() {
	p.mu.Lock()
	p.struck++
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.accepted++
		l := &link{conns: [2]net.Conn{c}, done: make(chan struct{})}
		p.conns[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.handle(l)
	}
}

// handle connects a link to the target and forwards both ways until
// either side ends or a fault ends it.
func (p *Proxy) handle(l *link) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
	}()
	switch f, _, _, _ := p.fault(Up); f {
	case Drop, Reset:
		p.strike()
		l.close(f == Reset)
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		// The target is down: the connecting side sees its connection
		// close, as it would a refused one through a real hop.
		l.close(true)
		return
	}
	l.mu.Lock()
	l.conns[1] = up
	gone := l.gone
	l.mu.Unlock()
	if gone {
		up.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.forward(l, Up, l.conns[0], up) }()
	go func() { defer wg.Done(); p.forward(l, Down, up, l.conns[0]) }()
	wg.Wait()
}

// forward copies src to dst in direction d, applying d's fault to each
// read's bytes, until either end closes or a fault closes both.
func (p *Proxy) forward(l *link, d Direction, src, dst net.Conn) {
	defer l.close(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.pass(l, d, buf[:n], dst) {
			return
		}
		if err != nil {
			return
		}
	}
}

// pass applies d's fault to b and writes what gets through to dst; false
// ends the link.
func (p *Proxy) pass(l *link, d Direction, b []byte, dst net.Conn) bool {
	held := false
	for {
		f, delay, changed, closed := p.fault(d)
		if closed {
			return false
		}
		switch f {
		case Drop, Reset:
			p.strike()
			l.close(f == Reset)
			return false
		case Delay:
			p.strike()
			select {
			case <-time.After(delay):
			case <-l.done:
				return false
			}
		case BlackHole:
			if !held {
				held = true
				p.strike()
			}
			select {
			case <-changed:
				continue // look again: healed, or another fault
			case <-l.done:
				return false
			}
		}
		_, err := dst.Write(b)
		return err == nil
	}
}

// link is one proxied connection: the accepted one and the one to the
// target.
type link struct {
	mu    sync.Mutex
	conns [2]net.Conn
	gone  bool
	done  chan struct{}
}

// close closes both connections, with a TCP reset if rst; the first call
// only acts.
func (l *link) close(rst bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return
	}
	l.gone = true
	close(l.done)
	for _, c := range l.conns {
		if c == nil {
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok && rst {
			tc.SetLinger(0)
		}
		c.Close()
	}
}
