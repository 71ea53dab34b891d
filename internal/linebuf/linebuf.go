package linebuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe to write from one goroutine while others
// read it. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Line returns the rest of the first whole line written that starts with
// prefix, trimmed of spaces; false while there is none. A line counts only
// once its newline is written, so a half-written address is never read.
func (b *Buffer) Line(prefix string) (string, bool) {
	for l := range strings.Lines(b.String()) {
		if rest, ok := strings.CutPrefix(l, prefix); ok && strings.HasSuffix(rest, "\n") {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}
