package link

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// Open is a client of the peer's API, signing with this bank's key for
// it; one try per request, since those who ask (the outbox, reconcile)
// try again themselves.
func Open(ctx context.Context, peers *peer.Registry, name string) (*client.Client, error) {
	p, err := peers.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return open(ctx, peers, p)
}

func open(ctx context.Context, peers *peer.Registry, p peer.Peer) (*client.Client, error) {
	key, err := peers.SigningKey(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	return client.Open(client.Options{Server: p.URL, Key: &key, CAFile: p.CAFile}, client.WithRetries(1, 0))
}

// Cache keeps a client for each peer, so that the requests a server sends
// a peer at once (traceback) reuse their connections; one is made again
// when the peer's URL, CA file or key changes.
type Cache struct {
	mu    sync.Mutex
	links map[string]cached
}

type cached struct {
	url, caFile, keyID string
	c                  *client.Client
}

// Open is Open, through the cache.
func (k *Cache) Open(ctx context.Context, peers *peer.Registry, name string) (*client.Client, error) {
	p, err := peers.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	want := cached{url: p.URL, caFile: p.CAFile}
	if p.Key != nil {
		want.keyID = p.Key.ID
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if have, ok := k.links[name]; ok && have.url == want.url && have.caFile == want.caFile && have.keyID == want.keyID {
		return have.c, nil
	}
	if want.c, err = open(ctx, peers, p); err != nil {
		return nil, err
	}
	if k.links == nil {
		k.links = map[string]cached{}
	}
	k.links[name] = want
	return want.c, nil
}

// Reconcile compares this bank's records of the transactions with a peer
// that began in [from, to) (zero bounds: open) with the peer's own,
// asked of it now (peer.Compare).
func Reconcile(ctx context.Context, peers *peer.Registry, name string, from, to time.Time) (peer.Reconciliation, error) {
	c, err := Open(ctx, peers, name)
	if err != nil {
		return peer.Reconciliation{}, err
	}
	there, err := c.ExchangeTransactions(ctx, from, to)
	if err != nil {
		return peer.Reconciliation{}, fmt.Errorf("reconcile with %s: its records: %w", name, err)
	}
	here, err := peers.Exchanged(ctx, name, from, to)
	if err != nil {
		return peer.Reconciliation{}, err
	}
	return peer.Compare(name, from, to, here, there), nil
}
