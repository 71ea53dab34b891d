package boltstore

import "github.com/ingot-hpc/ingot/ledger"

// ActiveLiens counts the active liens, for the server's metrics. It counts
// the keys of the active-lien index and decodes no lien.
func (s *Store) ActiveLiens() (int, error) {
	var n int
	err := s.View(func(t ledger.Tx) error {
		return forEach(t.(*tx).bucket(bucketLiensActive), func(_, _ []byte) error {
			n++
			return nil
		})
	})
	return n, err
}
