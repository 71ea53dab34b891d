package boltstore

import (
	"os"
	"strconv"
	"syscall"
)

// preallocate gives f blocks and a size of n bytes, zeros, so that appending
// within them changes no file system metadata: a log sync is then a flush
// of the data alone, without a journal commit of ext4 that other files'
// changes (a checkpoint's) would share and slow.
func preallocate(f *os.File, n int64) error { return syscall.Fallocate(int(f.Fd()), 0, 0, n) }

// initialMmapSize is the address space bbolt maps for the file from the
// start (it grows the mapping as the file outgrows it). Remapping waits
// for every read transaction to end and blocks new ones meanwhile, so a
// checkpoint that grew the file stalled the committer, whose groups read
// in one; it also copied every node of the transaction out of the old
// mapping. On Linux a mapping beyond the end of the file costs address
// space only (none of it on a 32-bit machine, where that is scarce).
const initialMmapSize = (8 << 30) * (strconv.IntSize / 64)
