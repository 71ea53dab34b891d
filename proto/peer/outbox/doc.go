// Package outbox sends the transactions this bank begins with its peers
// (package peer), each until the peer answers.
//
// A transaction is journaled, pending, before anything is sent (peer.Begin).
// The outbox, a goroutine of `ingot serve`, reads the pending ones and
// sends each to its peer, signed with the key this bank holds for it,
// under the transaction's id as the request id. The peer applies a request
// id once and answers a repeat with its first answer, so however often a
// transaction is sent (a lost answer, this bank killed after sending and
// before recording the answer, a link that drops), it is applied once.
// The answer is then journaled here (peer.Settle): done, or refused with
// the peer's reason when the peer refuses it for good (an account its
// agreement does not name, say). A peer that cannot be reached, is busy,
// or does not know the key yet is tried again after a pause that doubles
// up to a minute; nothing is ever given up. Each peer's transactions are
// sent in order by a goroutine of their own, so a peer that does not
// answer holds up no other peer's.
//
// The outbox also begins the usage reports that are due (peer.ReportDue),
// as each period ends (a UTC day unless ReportPeriod says otherwise): one
// a period to each peer that granted allocations here, sent as any
// transaction is.
//
// The outbox never holds a lock the bank's requests need: it reads the
// pending transactions in a read transaction and records each answer in
// a change of its own, so local requests go on while a peer is away.
// Every sending, the outbox's or a forwarded operation's (Forward), tells
// the registry whether the peer answered (peer.Registry.Reached,
// Unreachable): while a peer is known away, Forward sends nothing but a
// try now and then, so that no scheduler waits on it at every job.
package outbox
