package clients

import (
	"context"
	"slices"

	"github.com/ingot-hpc/ingot/proto/auth"
)

// GoldKey is a key that signs Gold's SSSRMAP messages: a valid key of a
// client made with Gold set. Text is its secret as Gold's auth_key file
// and Maui's CSKEY hold it (auth.Key.SecretText), whose bytes are the
// HMAC-SHA1 key.
type GoldKey struct {
	ID     string
	Text   []byte
	Client Client
}

// GoldKeys lists the keys that sign Gold's messages. SSSRMAP names no key,
// so the listener tries each: they are cached, and the cache is emptied by
// every change of a client, as Lookup's is.
func (r *Registry) GoldKeys(ctx context.Context) ([]GoldKey, error) {
	r.mu.Lock()
	cached, generation := r.gold, r.generation
	r.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	list, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	keys := []GoldKey{}
	for _, c := range list {
		if !c.Gold {
			continue
		}
		for _, k := range c.Keys {
			if !k.Revoked.IsZero() {
				continue
			}
			secret, err := r.unseal(c.Name, k)
			if err != nil {
				return nil, err
			}
			text := auth.Key{ID: k.ID, Secret: secret}.SecretText()
			keys = append(keys, GoldKey{ID: k.ID, Text: []byte(text), Client: c.Public()})
		}
	}
	r.mu.Lock()
	if r.generation == generation {
		r.gold = keys
	}
	r.mu.Unlock()
	return slices.Clip(keys), nil
}
