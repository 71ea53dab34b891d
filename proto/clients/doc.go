// Package clients keeps the bank's API clients (schedulers, services,
// remote administrators and users) and their HMAC keys.
//
// A client has a role (admin, manager of some nodes, scheduler of some
// machines, or user acting as one bank user) and one or more keys. A key's
// 256-bit secret is shown once, when it is made, and stored only sealed
// with XChaCha20-Poly1305 under the server key, a separate file of 32 random
// bytes: a copy of the database alone reveals no secret. Rotation adds a
// key beside the old ones (both work until the old one is revoked).
//
// Clients are ledger records, so every change is journaled and audited like
// the rest of the bank. The journal and the stored answers of idempotent
// requests only ever see sealed secrets: a key is made outside the retried
// ledger change, so a retry that lost its answer is refused as a conflict
// instead of returning a secret that is not the stored one.
package clients
