package runtimetune

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Percent is the collector's GOGC when the environment sets none. At Go's
// 100 the collector took about a tenth of the server's CPU under load,
// while the live heap is a few tens of MB: at 400 it runs a quarter as
// often, for a heap that may grow to five times the live data
// (docs/server.md).
const Percent = 400

// ExtraProcs is how many Ps the bank runs beyond the runtime's default
// (one per core the process may use) when the environment sets no
// GOMAXPROCS. The syncer's fdatasync of the log blocks its thread for
// 0.2-3 ms several thousand times a second; coming back it needs a P, and
// with one per core both are held by the committer and the callers it
// has just answered, so the answers to a whole synced batch waited. With
// one more P it finds one free: 13,165 -> 15,244 lien+charge cycles/s at
// 64 goroutines on this project's 2-core machine (mean of five
// alternating runs each, docs/performance.md), the same on tmpfs, where
// a sync does not block; two more gave no more.
const ExtraProcs = 1

// OffloadCPUs is the fewest cores on which the bank hands work off its
// single writer to other goroutines: callers price their liens and
// charges ahead (package lien), and the log's recorder encodes the answers
// kept for retries (package ledger). On this project's 2-core machine the
// writer waits for the log a sixth of the time while the other core runs
// the log's syncs (about 0.2 ms of CPU each on its VM), the checkpointer,
// the recorder and every caller; work handed off only made that core the
// limit. In process, 64 goroutines, 40,000 lien+charge cycles on the disk,
// alternating pairs: the writer pricing, 20,111 -> 21,206 cycles/s (five
// pairs), and encoding the answers as well, 20,496 -> 21,230 (six pairs,
// ahead in five); on tmpfs, where the writer is the limit, pricing ahead
// was worth 22,088 -> 23,973. Both again in session 12, fourteen pairs:
// 19,255 with the writer doing them against 18,420 handed off. The log's
// recorder itself runs as a goroutine of its own only from this many
// cores (package boltstore).
const OffloadCPUs = 4

// Offload tells whether this machine has OffloadCPUs cores or more.
func Offload() bool { return runtime.NumCPU() >= OffloadCPUs }

// Apply sets the collector to Percent and GOMAXPROCS to the runtime's
// default plus ExtraProcs, each unless the environment sets it, and
// returns what puts back the settings it replaced.
func Apply() (restore func()) {
	var undo []func()
	if _, set := os.LookupEnv("GOGC"); !set {
		previous := debug.SetGCPercent(Percent)
		undo = append(undo, func() { debug.SetGCPercent(previous) })
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		previous := runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(previous + ExtraProcs)
		undo = append(undo, func() { runtime.GOMAXPROCS(previous) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
