package boltstore

import (
	"os"
	"syscall"
)

// preallocate gives f blocks and a size of n bytes, zeros, so that appending
// within them changes no file system metadata: a log sync is then a flush
// of the data alone, without a journal commit of ext4 that other files'
// changes (a checkpoint's) would share and slow.
func preallocate(f *os.File, n int64) error { return syscall.Fallocate(int(f.Fd()), 0, 0, n) }
