package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/linebuf"
)

// TestBufferedLog: an info line is written within a flush interval, not
// at once; a warning at once, with what came before it; Close writes
// what is left.
func TestBufferedLog(t *testing.T) {
	var dst linebuf.Buffer
	out := newBufferedLog(&dst)
	log := slog.New(flushingHandler{slog.NewJSONHandler(out, nil), out})
	log.Info("request one")
	if strings.Contains(dst.String(), "request one") {
		t.Fatal("an info line was written at once")
	}
	deadline := time.Now().Add(10 * logFlushEvery)
	for !strings.Contains(dst.String(), "request one") {
		if time.Now().After(deadline) {
			t.Fatalf("an info line was not written within %s", 10*logFlushEvery)
		}
		time.Sleep(logFlushEvery / 10)
	}
	log.Info("request two")
	log.Warn("trouble")
	if s := dst.String(); !strings.Contains(s, "request two") || !strings.Contains(s, "trouble") {
		t.Fatalf("a warning did not write the buffer at once: %q", s)
	}
	log.Info("last words")
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dst.String(), "last words") {
		t.Fatal("Close did not write what was left")
	}
}
