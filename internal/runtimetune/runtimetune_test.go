package runtimetune

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// unset removes an environment variable for the test's length.
func unset(t *testing.T, name string) {
	t.Setenv(name, "") // restored after the test
	os.Unsetenv(name)
}

func TestApplySetsAndRestores(t *testing.T) {
	unset(t, "GOGC")
	unset(t, "GOMAXPROCS")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	procs := runtime.GOMAXPROCS(0)
	restore := Apply()
	if got := debug.SetGCPercent(Percent); got != Percent {
		t.Fatalf("after Apply the collector is at %d, want %d", got, Percent)
	}
	if got := runtime.GOMAXPROCS(0); got != procs+ExtraProcs {
		t.Fatalf("after Apply GOMAXPROCS is %d, want %d", got, procs+ExtraProcs)
	}
	restore()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("after restore the collector is at %d, want 150", got)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("after restore GOMAXPROCS is %d, want %d", got, procs)
	}
}

func TestApplyLeavesWhatTheEnvironmentSets(t *testing.T) {
	t.Setenv("GOGC", "150")
	t.Setenv("GOMAXPROCS", "1")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	procs := runtime.GOMAXPROCS(0)
	Apply()()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("with GOGC set, Apply changed the collector to %d", got)
	}
	restore := Apply()
	defer restore()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("with GOMAXPROCS set, Apply changed it from %d to %d", procs, got)
	}
}
