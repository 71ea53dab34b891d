package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushEvery is how long a request's log line may wait in serve's log
// buffer.
const logFlushEvery = 100 * time.Millisecond

// bufferedLog is serve's log output: lines are gathered in a buffer and
// written every logFlushEvery, and at once from a warning up. Writing each
// request's line with a system call of its own was about a tenth of the
// server's CPU per request outside the bank. A server killed outright loses
// at most the last logFlushEvery of request lines; the bank's own record
// of every change is the journal, not this log.
type bufferedLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newBufferedLog(w io.Writer) *bufferedLog {
	b := &bufferedLog{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushLoop()
	return b
}

func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Flush writes what the buffer holds.
func (b *bufferedLog) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

func (b *bufferedLog) flushLoop() {
	defer close(b.done)
	tick := time.NewTicker(logFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			b.Flush()
		case <-b.stop:
			return
		}
	}
}

// Close stops the flushing and writes what is left.
func (b *bufferedLog) Close() error {
	close(b.stop)
	<-b.done
	return b.Flush()
}

// flushingHandler writes a record of level warning or above, and what was
// buffered before it, at once.
type flushingHandler struct {
	slog.Handler
	log *bufferedLog
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.log.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.log}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.log}
}
