package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/hfs"
)

// planCache keeps each account's HFS plan between transactions, so that a
// lien's availability check costs a walk of the tree's path (hfs.Plan)
// rather than reading and planning the whole tree.
//
// It must never answer for a state other than the one asked about. An
// entry is valid only:
//   - at the account's version, which the newest journal entry that
//     changed it gave it (accountState.Version, newVersion): no version is
//     made twice, so an entry updated by a transaction that then rolled
//     back carries a version no committed state has and is never used
//     again;
//   - before validUntil, the first instant at which time alone changes the
//     split: the earliest expiry of a lien it counts, the next start or end
//     of one of the account's allocations.
//
// Writers keep entries current: after a lien, charge or refund entry they
// move the demands it changed (Plan.SetDemand) and the entry's version;
// any other change to the account drops its entry, to be rebuilt on the
// next check. What an entry read that such a change leaves as it was
// outlives it (carriedPlan): the liens it kept for preemptions (jobs)
// while no lien changes, and the account's nodes while no node changes.
// A deposit changes the pool, not the liens or the tree, and reading and
// decoding them again is most of what the first preemption answer after
// it would cost.
type planCache struct {
	mu      sync.Mutex
	entries map[string]*cachedPlan
	carried map[string]*carriedPlan
}

// carriedPlan is what an account's dropped entry read that is still
// valid, at version and before until (the entry's validUntil: the first
// lien expiry or allocation edge ahead), for the entry that replaces it:
// its jobs (nil once a lien changed) and its nodes (nil once a node
// changed). An allocation that an entry made active since holds nothing
// of the liens; one that time makes active or ended is an edge, past
// until.
type carriedPlan struct {
	version string
	until   time.Time
	jobs    *accountJobs
	nodes   []Node
}

// empty says whether nothing carried is left.
func (cp *carriedPlan) empty() bool { return cp.jobs == nil && cp.nodes == nil }

// moveTo brings cp from the version before entry e to version, which e
// gave the account, dropping what e changed; false if nothing is left.
// oldLien is the lien e replaced (nil if new).
func (cp *carriedPlan) moveTo(version string, e Entry, oldLien *Lien) bool {
	if e.Lien != nil || oldLien != nil {
		cp.jobs = nil
	}
	if e.NodeState != nil {
		cp.nodes = nil
	}
	cp.version = version
	return !cp.empty()
}

// maxCachedAccounts bounds the cache; beyond it an arbitrary entry goes.
const maxCachedAccounts = 1024

type cachedPlan struct {
	version    string
	validUntil time.Time
	hfsOn      bool
	plan       *hfs.Plan
	demand     map[string]decimal.Decimal
	demandSum  decimal.Decimal // of demand, so that free costs the same however many projects
	active     map[uint64]bool // the allocations counted in the pool
	precision  int32
	// owners says whether a project of the account owns credits; jobs,
	// kept once a preemption asked for them in such an account, are its
	// liens that hold credits (nil: not kept).
	owners bool
	jobs   *accountJobs
	pool   decimal.Decimal
	// nodes are the account's, which the plan was made from.
	nodes []Node
}

// free is what the account's liens leave of its active allocations: the
// pool less the demands (the charges, which the pool counts, cancel out).
func (e *cachedPlan) free() decimal.Decimal { return e.pool.Sub(e.demandSum) }

func newPlanCache() *planCache {
	return &planCache{entries: map[string]*cachedPlan{}, carried: map[string]*carriedPlan{}}
}

// versionPrefix and versionCount make the versions of accounts
// (newVersion): a prefix drawn at random once per process, so that none
// is one a file holds from an earlier process, and a count.
var (
	versionPrefix = randomVersionPrefix()
	versionCount  atomic.Uint64
)

func randomVersionPrefix() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("ledger: no randomness for account versions: %v", err))
	}
	return hex.EncodeToString(b[:]) + "-"
}

// newVersion is a version no account had before: what an entry that
// changes an account gives it (accountState.Version).
func newVersion() string {
	return versionPrefix + strconv.FormatUint(versionCount.Add(1), 36)
}

// available answers from the cache for account at version and time now;
// ok is false on a miss.
func (c *planCache) available(account, version, node string, now time.Time) (a decimal.Decimal, hfsOn, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[account]
	if e == nil || e.version != version || !now.Before(e.validUntil) {
		return decimal.Zero, false, false, nil
	}
	if !e.hfsOn {
		return decimal.Zero, false, true, nil
	}
	r, err := e.plan.Available(node)
	if err != nil {
		return decimal.Zero, true, false, err
	}
	return decimal.NewFromBigRat(r, e.precision), true, true, nil
}

// store keeps a plan built from s at version.
func (c *planCache) store(tx Tx, account, version string, s *shareState, now time.Time, precision int32) error {
	e := &cachedPlan{version: version, hfsOn: s.hfsOn, demand: map[string]decimal.Decimal{}, active: map[uint64]bool{}, precision: precision, nodes: s.nodes}
	until, err := s.validUntil(tx, account, now)
	if err != nil {
		return err
	}
	e.validUntil = until
	if s.hfsOn {
		if e.plan, err = s.plan(precision); err != nil {
			return err
		}
		for _, n := range s.nodes {
			e.demand[n.Name] = s.used[n.Name].Add(s.reserved[n.Name])
			e.demandSum = e.demandSum.Add(e.demand[n.Name])
		}
		for _, a := range s.funds.Allocations {
			e.active[a.ID] = true
		}
		e.owners, e.pool = hasOwners(s.nodes), s.pool
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedAccounts {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	// The entry takes over what was carried for it.
	if cp := c.carriedLocked(account, version, now); cp != nil && e.owners {
		e.jobs = cp.jobs
	}
	delete(c.carried, account)
	c.entries[account] = e
	return nil
}

// takeJobs hands over the jobs carried for account at version and time
// now (nil if none): they leave the cache, to be kept again by keepJobs
// in the entry they are used with.
func (c *planCache) takeJobs(account, version string, now time.Time) *accountJobs {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.carriedLocked(account, version, now)
	if cp == nil {
		return nil
	}
	jobs := cp.jobs
	if cp.jobs = nil; cp.empty() {
		delete(c.carried, account)
	}
	return jobs
}

// nodes are the nodes carried for account at version and time now (nil
// if none), for loadShares; they stay, for the entry made from them
// (store).
func (c *planCache) nodes(account, version string, now time.Time) []Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.carriedLocked(account, version, now); cp != nil {
		return cp.nodes
	}
	return nil
}

// carriedLocked is what is carried for account at version and time now,
// nil if nothing (a carried plan past its time goes).
func (c *planCache) carriedLocked(account, version string, now time.Time) *carriedPlan {
	cp := c.carried[account]
	switch {
	case cp == nil || cp.version != version:
		return nil // none, or for a state this reader does not see
	case !now.Before(cp.until):
		delete(c.carried, account)
		return nil
	}
	return cp
}

// carry keeps what account's entry ce read that entry e, which dropped it
// and gave the account version, left as it was.
func (c *planCache) carry(account, version string, ce *cachedPlan, e Entry, oldLien *Lien, now time.Time) {
	cp := &carriedPlan{until: ce.validUntil, jobs: ce.jobs, nodes: ce.nodes}
	if !now.Before(ce.validUntil) || !cp.moveTo(version, e, oldLien) {
		return
	}
	if len(c.carried) >= maxCachedAccounts {
		for k := range c.carried {
			delete(c.carried, k)
			break
		}
	}
	c.carried[account] = cp
}

// preempt runs answer on account's entry at version and time now, under
// the cache's lock (writers change the plan and the jobs under it); ok is
// false on a miss, for an account HFS does not split, or one with owners
// whose jobs are not kept yet.
func (c *planCache) preempt(account, version string, now time.Time, answer func(*cachedPlan) error) (ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[account]
	if e == nil || e.version != version || !now.Before(e.validUntil) || !e.hfsOn || e.owners && e.jobs == nil {
		return false, nil
	}
	return true, answer(e)
}

// keepJobs keeps an account's jobs in its entry at version.
func (c *planCache) keepJobs(account, version string, jobs *accountJobs) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[account]; e != nil && e.version == version && e.owners {
		e.jobs = jobs
	}
}

// validUntil is the first instant after now at which time alone changes the
// account's split: a counted lien expiring, an allocation starting or
// ending.
func (s *shareState) validUntil(tx Tx, account string, now time.Time) (time.Time, error) {
	until := now.Add(24 * time.Hour) // a bound, so that nothing is cached for ever
	if next, ok, err := nextExpiry(tx, account, now, until); err != nil {
		return time.Time{}, err
	} else if ok && next.Before(until) {
		until = next
	}
	// An allocation that has ended has no start or end ahead; one that
	// has not started ends after its start. The pool counts the active
	// ones (funds) and the used-up ones until their ends.
	for _, a := range s.funds.Allocations {
		if !a.End.IsZero() && a.End.Before(until) {
			until = a.End
		}
	}
	for _, end := range s.usedUpEnds {
		if end.Before(until) {
			until = end
		}
	}
	if next, ok, err := tx.NextStart(account, now); err != nil {
		return time.Time{}, err
	} else if ok && next.Before(until) {
		until = next
	}
	return until, nil
}

// demandKinds are the entries whose effect on a cached plan is a change of
// demands only (the pool is unchanged: a charge moves credits from an
// allocation's amount to its charged part).
var demandKinds = map[Kind]bool{KindLienPlace: true, KindLienExtend: true, KindLienRelease: true,
	KindLienExpire: true, KindCharge: true, KindRefund: true}

// afterAppend brings account's entry from version prev to version, which
// entry e gave it: it moves the demands e changed, or drops the entry.
// oldLien and oldCharge are the records e replaced (nil if new).
func (c *planCache) afterAppend(account, prev, version string, e Entry, oldLien *Lien, oldCharge *Charge, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce := c.entries[account]
	if ce == nil {
		// What is carried goes on to the next version while e leaves it
		// as it was.
		if cp := c.carried[account]; cp != nil && (cp.version != prev || !now.Before(cp.until) || !cp.moveTo(version, e, oldLien)) {
			delete(c.carried, account)
		}
		return
	}
	if ce.version != prev || !now.Before(ce.validUntil) || !demandKinds[e.Kind] {
		delete(c.entries, account)
		if ce.version == prev {
			c.carry(account, version, ce, e, oldLien, now)
		}
		return
	}
	ce.version = version
	if !ce.hfsOn {
		return
	}
	change := map[string]decimal.Decimal{}
	// A charge or refund of an allocation the entry did not list may be
	// of a used-up one, which the pool counts: the plan is made again.
	uncounted := false
	counted := func(holds []Hold, project string, sign int64) {
		for _, h := range holds {
			if ce.active[h.Allocation] {
				change[project] = change[project].Add(h.Amount.Mul(decimal.NewFromInt(sign)))
			} else if e.Charge != nil {
				uncounted = true
			}
		}
	}
	if oldLien != nil && oldLien.Account == account && oldLien.HoldsAt(now) {
		counted(oldLien.Holds, oldLien.Project, -1)
		if ce.jobs != nil {
			ce.jobs.remove(*oldLien)
		}
	}
	if l := e.Lien; l != nil && l.Account == account && l.HoldsAt(now) {
		counted(l.Holds, l.Project, 1)
		if l.Expires.Before(ce.validUntil) {
			ce.validUntil = l.Expires
		}
		if ce.jobs != nil {
			ce.jobs.add(*l, ce.active)
		}
	}
	if oldCharge != nil && oldCharge.Account == account {
		counted(oldCharge.NetDebits(), oldCharge.Project, -1)
	}
	if ch := e.Charge; ch != nil && ch.Account == account {
		counted(ch.NetDebits(), ch.Project, 1)
	}
	if uncounted {
		delete(c.entries, account)
		return
	}
	for project, d := range change {
		if d.IsZero() {
			continue
		}
		ce.demand[project] = ce.demand[project].Add(d)
		ce.demandSum = ce.demandSum.Add(d)
		if err := ce.plan.SetDemand(project, ce.demand[project].Rat()); err != nil {
			delete(c.entries, account) // a project the plan does not know: rebuild
			return
		}
	}
}
