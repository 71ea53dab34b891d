package boltstore

import "math"

// SmallSegments makes the log start a new segment past size bytes until
// restore is called: for tests that want segments started, kept as the
// spare and made again from it after a few changes. Call it before opening
// a store, restore after closing it.
func SmallSegments(size int64) (restore func()) {
	old := segmentSize
	segmentSize = size
	return func() { segmentSize = old }
}

// RecorderStage makes stores opened from now on run a recorder goroutine
// (on) or have the syncer make the log records (off), whatever the
// machine's cores, until restore is called.
func RecorderStage(on bool) (restore func()) {
	old := recorderStageCPUs
	recorderStageCPUs = math.MaxInt
	if on {
		recorderStageCPUs = 0
	}
	return func() { recorderStageCPUs = old }
}
