// Package recordcache keeps decoded copies of the records a store's
// committer reads and writes. Nearly every change reads the same nodes,
// users, allocations, rate tables and running sums; decoding them (in
// bbolt) or fetching them (in PostgreSQL, a round trip each) was most of a
// change's cost, and it bounds the bank (docs/performance.md).
//
// The cache is exact only while nothing but its committer writes the
// store, so it belongs to one committer: writes wait in layers (Writes),
// join the cache when their transaction commits and are dropped when it
// rolls back; an engine whose store other processes may write (pgstore)
// clears it whenever another writer has been there. Views do not use it.
// Records go in and out as copies (Clone): the cache never shares a slice
// with a caller.
package recordcache
