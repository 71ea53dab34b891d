// Package link speaks to a peer bank for this one: a client of the peer's
// API that signs with the key this bank holds for it (Open), and the
// questions this bank asks of the peer's records (Reconcile).
//
// It sits between package peer, which keeps the agreements and the
// transactions, and the API client, which package peer cannot import (the
// client reads peer's types).
package link
