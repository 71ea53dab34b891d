// Package peer keeps the other banks this bank exchanges allocations and
// charges with, and the agreement with each.
//
// A peer is two things, made and removed together in one journaled ledger
// change:
//
//   - an API client of role peer, named as the peer, whose key the other
//     bank signs its requests to this one with (written once to the
//     --key-out file of `ingot peer add`, handed to the other bank's
//     operator like any key file). Its scope is the agreement: the
//     projects of this bank the peer may act on. Every route of the API
//     but the exchange's refuses the role, so a peer's key can do nothing
//     else here.
//   - a record of kind "peer": the other bank's URL, the CA file its
//     certificate is checked against, and the key this bank signs its own
//     requests to it with (the file the other bank's `ingot peer add`
//     wrote), stored sealed under the server key as clients' keys are.
//
// So each link is signed both ways with HMAC keys, each bank holding the
// secret of the key it answers to and, sealed, the one it signs with.
// A peer's URL is https, or http on a loopback address only: a
// signature proves who sent a request but hides nothing of it.
//
// Peers are records of the ledger: every engine stores them with no
// schema of its own, and the audit checks them like the other records.
// What the registry knows of which peers answer now (Registry.Away) is
// memory, not ledger: it only spares callers waiting on a peer away.
package peer
