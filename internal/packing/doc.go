// Package packing makes the records a bank keeps smaller: zstd
// (github.com/klauspost/compress) with a dictionary of ingot's own
// records. A lien + charge cycle's journal entries, lien, charge and
// history are JSON of the same shapes every time, about 3 KB a cycle;
// packed against a dictionary that holds one record of each shape they
// take about a quarter of that. The dictionary is what makes it work on
// records of a few hundred bytes, each packed alone (a record must be read
// without its neighbours); zstd at its fastest level packs a journal entry
// in tens of microseconds and unpacks it in a few.
//
// A packed value is a byte saying how it was packed (1: zstd with
// dictionary1.txt), then the zstd frame. Values stored before packing
// came in are JSON, which never starts with that byte: Unpack gives them
// back as they are, so a bank holds both and nothing needs rewriting.
//
// dictionary1.txt must never change: every value packed with it is
// unpacked with it, for the life of the bank (TestDictionaryUnchanged). A
// better dictionary is a new format byte and a new file beside it.
// dictionary1.txt is, one to a line, a record of each kind of a bank made
// by ledger/boltstore/testdata/mkbank.sh and one of a bank of lien +
// charge cycles: nodes, users, machines, journal entries of each kind,
// answers kept for retries, a lien, a charge, an allocation's history.
package packing
