package gold

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Handler answers a message whose envelope has been read: it checks the
// signature (Message.CheckDigest, Message.SignedWith), decodes the
// request (Message.Request) and acts on it.
type Handler interface {
	ServeGold(ctx context.Context, m *Message) Reply
}

// Reply is a Handler's answer: the response, the key that signed the
// request (nil if none did), which signs the reply, and for the log the
// client the key is and what was asked.
type Reply struct {
	Response
	Key            []byte
	Client         string
	Object, Action string
}

// Defaults of a Server's limits.
const (
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 60 * time.Second
	DefaultMaxPayload   = 1 << 20
)

// lingerTime is how long a connection is read from after the reply, so
// that closing it does not reset it while the client's own tail ("0\r\n",
// or Maui's NUL) is still coming in: a reset may destroy the reply before
// the client has read it.
const lingerTime = time.Second

// ErrServerClosed is what Serve returns after Shutdown or Close: net/http's,
// so that a caller serving both tests one.
var ErrServerClosed = http.ErrServerClosed

// Server serves SSSRMAP on listeners: one request per connection, as
// Gold's clients and Maui send them, answered and closed. The whole
// request must arrive within ReadTimeout, else it is answered 242; the
// reply must be taken within WriteTimeout. Handler and Log must be set;
// each request is logged once, at info, with its client, object, action,
// actor, code and duration, never its content.
type Server struct {
	Handler      Handler
	Log          *slog.Logger
	ReadTimeout  time.Duration // 0: DefaultReadTimeout
	WriteTimeout time.Duration // 0: DefaultWriteTimeout
	MaxPayload   int           // 0: DefaultMaxPayload

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]bool
	conns     map[net.Conn]bool
	active    sync.WaitGroup
}

// Serve accepts connections on ln and serves each in a goroutine until
// Shutdown or Close, then returns ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln, true) {
		return ErrServerClosed
	}
	defer s.track(ln, false)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				// As net/http does when file descriptors run out and the
				// like: wait a little, then accept again.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.Log.Warn("gold: accept failed; retrying", "error", err.Error(), "in", backoff.String())
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("gold: accept: %w", err)
		}
		backoff = 0
		if !s.trackConn(c, true) {
			c.Close()
			return ErrServerClosed
		}
		go func() {
			defer s.trackConn(c, false)
			s.serveConn(c)
		}()
	}
}

func (s *Server) track(ln net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listeners == nil {
		s.listeners, s.conns = map[net.Listener]bool{}, map[net.Conn]bool{}
	}
	if add && s.closed {
		return false
	}
	if add {
		s.listeners[ln] = true
	} else {
		delete(s.listeners, ln)
	}
	return true
}

func (s *Server) trackConn(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closed {
			return false
		}
		s.conns[c] = true
		s.active.Add(1)
		return true
	}
	delete(s.conns, c)
	s.active.Done()
	return true
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown stops accepting, and waits for the requests in flight to be
// answered, or for ctx to end, when it closes their connections.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeListeners()
	done := make(chan struct{})
	go func() {
		s.active.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// Close stops accepting and closes every connection at once.
func (s *Server) Close() error {
	s.closeListeners()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	return nil
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
}

// serveConn answers the one request of a connection and closes it.
func (s *Server) serveConn(c net.Conn) {
	start := time.Now()
	readTimeout := cmp.Or(s.ReadTimeout, DefaultReadTimeout)
	_ = c.SetReadDeadline(start.Add(readTimeout))
	reply := s.answer(c, readTimeout)
	_ = c.SetWriteDeadline(time.Now().Add(cmp.Or(s.WriteTimeout, DefaultWriteTimeout)))
	werr := WriteReply(c, reply.Encode(reply.Key))
	attrs := []slog.Attr{
		slog.String("remote", c.RemoteAddr().String()),
		slog.String("client", reply.Client),
		slog.String("object", reply.Object),
		slog.String("action", reply.Action),
		slog.String("actor", reply.Actor),
		slog.String("code", string(reply.Code)),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
	}
	if werr != nil {
		attrs = append(attrs, slog.String("error", "writing the reply: "+werr.Error()))
	}
	s.Log.LogAttrs(context.Background(), slog.LevelInfo, "gold request", attrs...)
	linger(c)
}

// answer reads the request and asks the handler, never panicking: a
// panic is logged and answered 900, as net/http answers one with 500.
func (s *Server) answer(c net.Conn, readTimeout time.Duration) (reply Reply) {
	defer func() {
		if p := recover(); p != nil {
			s.Log.Error("gold: panic answering a request", "remote", c.RemoteAddr().String(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			reply = Reply{Response: Failure("", Errorf(CodeInternal, "internal error (the server's log has the cause)"))}
		}
	}()
	payload, err := ReadPayload(bufio.NewReaderSize(c, maxHeaderLine), cmp.Or(s.MaxPayload, DefaultMaxPayload))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = Errorf(CodeMalformed, "the request did not arrive within %s", readTimeout)
	}
	if err != nil {
		if _, ok := errors.AsType[*Error](err); !ok {
			s.Log.Warn("gold: reading a request", "remote", c.RemoteAddr().String(), "error", err.Error())
		}
		return Reply{Response: Failure("", err)}
	}
	m, err := ParseMessage(payload)
	if err != nil {
		return Reply{Response: Failure("", err)}
	}
	return s.Handler.ServeGold(context.Background(), m)
}

// linger half-closes the connection, reads what the client still sends
// for a short while, and closes it.
func linger(c net.Conn) {
	defer c.Close()
	if tc, ok := c.(interface{ CloseWrite() error }); ok && tc.CloseWrite() == nil {
		_ = c.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, c, 64<<10)
	}
}

func cmpOr[T comparable](v, fallback T) T {
	var zero T
	if v == zero {
		return fallback
	}
	return v
}
