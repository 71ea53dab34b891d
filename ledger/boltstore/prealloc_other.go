//go:build !linux

package boltstore

import "os"

// preallocate does nothing where fallocate is missing: appends grow the file.
func preallocate(*os.File, int64) error { return nil }
