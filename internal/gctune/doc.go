// Package gctune is how ingot sets Go's garbage collector for a bank that
// runs for long and allocates per request: GOGC=400 unless the environment
// sets GOGC. `ingot serve` applies it at start; the benchmarks apply it
// to their timed runs, so that they measure the bank as it is served.
package gctune
