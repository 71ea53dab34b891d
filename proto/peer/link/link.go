package link

import (
	"context"
	"fmt"
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
	key, err := peers.SigningKey(ctx, name)
	if err != nil {
		return nil, err
	}
	return client.Open(client.Options{Server: p.URL, Key: &key, CAFile: p.CAFile}, client.WithRetries(1, 0))
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
