// Package multisite runs make e2e-multisite: three banks, a central bank
// and two sites, each a real `ingot serve` process on loopback with a
// bank of its own (a site's on PostgreSQL in the postgres run), linked as
// peers with the README's commands, every link between two banks through
// a fault-injecting proxy (internal/faultproxy). TestMultisite is its
// entry; make test runs a short one of each run.
//
// # The load
//
// The central bank's operators deposit at the sites (`deposit --at`,
// POST /v1/peers/deposits through proto/client), each deposit an
// operation with a request id of its own, sent until the central bank
// acknowledges it, as `ingot` retries. Each acknowledged deposit is a
// transaction the central bank's outbox sends to the site through the
// link's proxy. At each site meanwhile, a scheduler runs jobs: a lien,
// then a final charge, each sent until acknowledged (a lien refused for
// want of credits, before the grants arrive, is a job not run), in turn
// on the account the grants feed and on the visitors' project, homed at
// the other site's account (traceback): the site forwards the visitors'
// liens and charges there. The site's admin refunds a part of a job's
// charge now and then, a visitor's refund forwarded to its home too. Every site's server reports the
// usage of the central bank's grants every few seconds (ingot serve
// --usage-report-period, Config.ReportPeriod), so reports are begun, sent
// and answered under the faults too. The load is bounded in time and in
// count.
//
// # The faults
//
// While the load runs, two loops inject faults at random points: one
// gives a random busy link's proxy a random fault (drop, reset, delay or
// black hole) in a random direction for up to a few seconds, then heals
// it; the other kills a random bank with SIGKILL and starts it again on
// its port a moment later.
//
// # The checks
//
// Once the load has stopped, every link is healed and every bank is
// running; the time until no bank has a transaction pending is the time
// to drain. Every charge is journaled then: the run waits for each site's
// usage report of a period that ends after it to reach the central bank;
// then each site's server is started again reporting daily, so that no
// report is begun while the banks are compared (unless the run crosses
// midnight UTC then), and the banks drain again. Then:
//
//   - every acknowledged deposit is one transaction of the central bank,
//     done (a transaction the central bank holds that no acknowledged
//     deposit began, or two deposits that got one transaction, is
//     doubled);
//   - each site's journal holds each of its done transactions as one
//     deposit, under the transaction's id (none: lost; two: doubled),
//     and no deposit of the central bank's that no transaction explains;
//   - each site's journal holds each acknowledged charge once, under its
//     request id, and no other charge of its scheduler's; no lien is left
//     active;
//   - each transaction of a visitor's job is done or refused at the
//     visiting site, as many charges and refunds done as it
//     acknowledged, each done one applied once at the home site under its
//     id and nothing else of the visiting site's; the home's charges and
//     refunds are the figures sent;
//   - credits are conserved: each site's account holds exactly the sum
//     of the deposits acknowledged for it less the charges of its own
//     jobs and of the other site's visitors, net of their refunds;
//   - the usage reports the central bank received from each site follow
//     each other from the site's first grant on, with no gap (lost) or
//     overlap (doubled), each a report the site began and holds done,
//     each line of a grant of the central bank's there; together, and in
//     the central bank's `ingot usage`, they say what the site's jobs and
//     visitors spent of its account, to the credit;
//   - `ingot peer reconcile` on both banks of each link finds no
//     difference, and `ingot peer statement` at both ends says the sum
//     of the deposits acknowledged, and the usage reported the sum of
//     what was spent at the site, with nothing pending or refused;
//   - no transaction is pending;
//   - every bank's `ingot audit --full` passes, on the bank itself once
//     its server has stopped.
//
// It prints the operations, the faults injected by kind, lost (0),
// doubled (0), the time to drain, the usage reports and what reconcile
// found. Anything lost
// or doubled, an acknowledged deposit refused, or a failed audit fails
// the test.
//
// The package is test support: the product never imports it.
package multisite
