package linebuf

import (
	"fmt"
	"sync"
	"testing"
)

func TestLineWaitsForTheNewline(t *testing.T) {
	var b Buffer
	fmt.Fprint(&b, "starting\nlistening on http://127.0.0.1:")
	if got, ok := b.Line("listening on "); ok {
		t.Fatalf("half a line read as %q", got)
	}
	fmt.Fprint(&b, "8080 \nlistening on other\n")
	if got, ok := b.Line("listening on "); !ok || got != "http://127.0.0.1:8080" {
		t.Fatalf("Line = %q, %v; want the first whole line", got, ok)
	}
	if _, ok := b.Line("absent"); ok {
		t.Fatal("a prefix never written was found")
	}
}

// TestConcurrentWritesAndReads is for the race detector: one writer, one
// reader, as a process's output is read while it runs.
func TestConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}()
	for range 200 {
		b.Line("line 199")
	}
	wg.Wait()
	if got, ok := b.Line("line 199"); !ok || got != "" {
		t.Fatalf("last line: %q, %v", got, ok)
	}
}
