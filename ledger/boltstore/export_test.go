package boltstore

// SmallSegments makes the log start a new segment past size bytes until
// restore is called: for tests that want segments started, kept as the
// spare and made again from it after a few changes. Call it before opening
// a store, restore after closing it.
func SmallSegments(size int64) (restore func()) {
	old := segmentSize
	segmentSize = size
	return func() { segmentSize = old }
}
