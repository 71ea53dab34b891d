package boltstore

import bolt "go.etcd.io/bbolt"

// ActiveLiens counts the active liens, for the server's metrics. It reads
// the key counts in the page headers of the active-lien index and decodes
// no lien, so a scrape costs a walk of that index's pages, not of the liens.
func (s *Store) ActiveLiens() (int, error) {
	var n int
	err := s.db.View(func(btx *bolt.Tx) error {
		n = btx.Bucket(bucketLiensActive).Stats().KeyN
		return nil
	})
	return n, err
}
