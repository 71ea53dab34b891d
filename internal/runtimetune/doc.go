// Package runtimetune is how ingot sets Go's runtime for a bank that runs
// for long, allocates per request and syncs a log file many times a
// second: the garbage collector at GOGC=400 and one more P than the
// runtime's default (GOMAXPROCS), each unless the environment sets it.
// `ingot serve` applies it at start; the benchmarks apply it to their
// timed runs, so that they measure the bank as it is served. Offload says
// whether the machine has the cores to hand work off the bank's single
// writer.
package runtimetune
