// Package soak runs ingot's soak: a mixed workload from many clients
// against real `ingot serve` processes, for a set time, while faults are
// injected, and checks after each fault and at the end that nothing
// acknowledged was lost or applied twice. `make soak` runs it
// (docs/operations.md, "Soak before going live"); TestSoak is its entry,
// and make test runs a short version of it.
//
// # The workload
//
// The bank (set up with the ingot command line: three accounts, projects,
// two machines, three users, an API client per worker) is served by one
// `ingot serve` on a bbolt file, or by two on a PostgreSQL database with
// a synchronous standby (internal/pgtest). Each worker is an API client
// of its own, with its own connections, through proto/client (request
// ids, retries):
//
//   - schedulers run jobs, up to four at a time each: a lien when the job
//     starts, incremental charges of some, then a final charge, or a
//     release for one job in seven;
//   - admins deposit (topping up each account's allocation), transfer
//     between accounts, and refund a quarter of some final charges;
//   - readers read balances, liens, a node's last journal entries, what is
//     available, usage and a statement;
//   - a web user (amy) signs in to the web page with a link, as `ingot
//     web-login` prints it, and reads her home page.
//
// A change is sent until the bank acknowledges it, always with its
// request id, as a scheduler's retries do: an answer that does not come,
// a busy server, or a refusal the fault under way explains, is sent
// again. Any other refusal fails the soak.
//
// # The faults
//
// The soak runs in rounds, each with a fault, then a checkpoint:
//
//   - SIGKILL of a server under load, started again on its port;
//   - a full disk (bbolt): the bank is moved onto a small tmpfs, which is
//     filled while the load runs: changes are refused with the system's
//     reason and nothing acknowledged is lost; the space is freed and
//     changes are acknowledged again without a restart;
//   - an fsync failure (bbolt): the bank is moved onto internal/lazyfs,
//     whose fsyncs are made to fail: the store must stop, and refuse every
//     change, even once the disk works again, until the server is
//     restarted (no change first sent after that may be acknowledged);
//   - clock jumps: `ingot serve` takes no clock from a test (ledger's
//     WithClock is in process only), so the clients' clocks jump, the
//     ones their signatures are dated with: 4 minutes ahead and behind,
//     within the server's ±5 minutes, where nothing may be refused; then
//     6 minutes, where half the clients' requests are refused as
//     unauthenticated, and sent again once their clocks are right;
//   - a PostgreSQL failover: the primary is killed, the standby promoted
//     (as TestPostgresFailover does), the new primary given a standby of
//     its own, and the servers restarted one at a time naming the new
//     pair, so that the next failover has somewhere to go.
//
// Throughout, in the background: an answer to a change is dropped after
// the server sent it (the client sends the change again); an acknowledged
// change is sent again, through the other server on PostgreSQL, and must
// get its first answer; a change is sent twice at once (through both
// servers on PostgreSQL), both answers the same; an acknowledged change's
// request id is sent with another body, which must be refused as a
// conflict.
//
// The full disk and the fsync failure need root (to mount a tmpfs, and
// FUSE); without it they are left out and the table says so, except
// under INGOT_E2E=1 (make soak sets it), where that fails the soak. On
// PostgreSQL, the bank's disk is PostgreSQL's, whose faults are the
// failover's business: the disk faults are bbolt's.
//
// # The checks
//
// At each checkpoint the workers stop between requests, so that every
// change sent has been acknowledged, and:
//
//   - the journal read since the last checkpoint (through the API, a
//     window of time at a time) holds every change acknowledged since,
//     exactly once, as its answer described it (kind, entry, lien or
//     charge); no request of the soak's clients is in the journal twice;
//     the last entry read at the previous checkpoint is still there with
//     its hash, which with the audit's check of the hash chain vouches for
//     every entry before it;
//   - each account's amount is what the acknowledged deposits, transfers,
//     charges and refunds add up to (a change applied twice under another
//     request id shows there);
//   - the active liens are exactly those of the jobs the schedulers have
//     running: a lien of a job charged or released, or never
//     acknowledged, is leaked;
//   - `ingot audit --full` passes, through the server.
//
// At the end the schedulers charge or release every job, the checks run
// once more (no active lien, nothing reserved), the whole journal is read
// again and counted afresh, the servers are stopped, and `ingot audit
// --full` runs on the bank itself. Any failure fails the test, after the
// table is printed: load held (changes, reads, sign-ins a second; p50, p99
// and max latency of the answered requests), the faults injected by kind,
// the changes acknowledged, lost and doubled.
//
// The soak is test support: the product never imports it.
package soak
