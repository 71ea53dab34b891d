package gctune

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestApplySetsAndRestores(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	restore := Apply()
	if got := debug.SetGCPercent(Percent); got != Percent {
		t.Fatalf("after Apply the collector is at %d, want %d", got, Percent)
	}
	restore()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("after restore the collector is at %d, want 150", got)
	}
}

func TestApplyLeavesGOGCOfTheEnvironment(t *testing.T) {
	t.Setenv("GOGC", "150")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	Apply()()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("with GOGC set, Apply changed the collector to %d", got)
	}
}
