// Package ahead runs a function over a sequence on the machine's other
// cores, ahead of where the sequence is used, and hands the results over
// in order. Reading a stretch of the journal is mostly unpacking and
// decoding each entry, work on the entry's bytes alone, while the reading
// itself (a bbolt cursor, a transaction) must stay on one goroutine:
// this lets the other cores do the first while that goroutine does the
// second.
package ahead
