//go:build !linux

package boltstore

import "os"

// preallocate does nothing where fallocate is missing: appends grow the file.
func preallocate(*os.File, int64) error { return nil }

// initialMmapSize is left to bbolt where mapping beyond the end of a file
// may grow the file (Windows).
const initialMmapSize = 0
