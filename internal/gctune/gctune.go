package gctune

import (
	"os"
	"runtime/debug"
)

// Percent is the collector's GOGC when the environment sets none. At Go's
// 100 the collector took about a tenth of the server's CPU under load,
// while the live heap is a few tens of MB: at 400 it runs a quarter as
// often, for a heap that may grow to five times the live data
// (docs/server.md).
const Percent = 400

// Apply sets the collector to Percent unless the environment sets GOGC,
// and returns what puts back the setting it replaced.
func Apply() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	previous := debug.SetGCPercent(Percent)
	return func() { debug.SetGCPercent(previous) }
}
