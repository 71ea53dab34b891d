// Package hfs splits an account's credits among its nested projects by a
// hierarchical fair-share (HFS) tree, and ranks jobs by Grid Engine's share
// tree. It is pure computation: no storage, no clock, nothing of ingot's
// imported. DESIGN.md section 4 fixes the semantics; this comment says how
// they are computed and what was chosen where the design is silent.
//
// # Model
//
// The root of the tree is the account; it takes the pool (what its active
// allocations could spend in all). Every other node is a project with a
// policy:
//
//   - a quota: Static (credits), Dynamic (a fraction 0..1) or Shares (a
//     weight); none is dynamic 0;
//   - AcceptSurplus: whether it may receive surplus from above (it always
//     receives surplus from below);
//   - Limit: a cap on what its whole subtree may be allocated;
//   - NonShared: part of its own quota it never lends out;
//   - Ownership (leaves only): credits it owns, LSF's OWNERSHIP;
//   - GroupNonShared: credits reserved for its subtree, LSF's NON_SHARED
//     of a group;
//   - Priority: its rank among its siblings, for preemption.
//
// Every node, the root included, has a demand: its own charges and liens.
// A nil demand is unbounded, which is how the ledger asks what a project
// could get.
//
// # Algorithm
//
// HTCondor's hierarchical group quotas with quota over-subscription off,
// plus LSF's shares, limits and non-shared quota:
//
//  0. The carve, top-down (quota.go's carveQuota), before each node's
//     quotas are split: of its subtree quota the node first keeps its own
//     group non-shared, then its own ownership, then its children's
//     carves (what ownership and group non-shared claim in their
//     subtrees) are set aside for them. When they do not fit, they are
//     satisfied level by level, as LSF satisfies non-shared configured on
//     several levels: the children's own claims first, then their
//     children's, and so on down; the level that does not fit shares what
//     is left in proportion to its claims, the levels below it get
//     nothing, and Result.Shortfalls names who is short. The node's own
//     part stays in its own quota: the reserve is held by step 2, the
//     ownership lent when unused. What is left is q below. With neither
//     set anywhere, nothing changes.
//  1. Quotas, top-down (quota.go). With q a node's subtree quota: static
//     children share Sa = min(Σstatic, q) in proportion to their values;
//     dynamic children get f·Da/max(Σf, 1) of Da = q − Sa; share children
//     split the rest by weight. A child's subtree quota is then capped by
//     its limit. What the children do not take (the rest when there are no
//     share children, what limits cut off) is the node's own quota.
//  2. Fair share (fairshare.go, waterfill.go). Bottom-up, each node takes
//     min(demand, own quota); its unused own quota, less what non_shared
//     holds back, is surplus. A node gathers its own surplus and what its
//     children's subtrees pass up, and shares it among itself (weighted by
//     its own quota) and its accepting children (weighted by their subtree
//     quotas), never beyond a candidate's unmet demand or a subtree's
//     limit; what the weighted candidates cannot take goes evenly to
//     zero-weight ones; the rest goes up, but what the node's group
//     non-shared keeps (up to what it got of it), which is held. What
//     reaches the root unclaimed is left over. Then, top-down, what each
//     level gave a child subtree is handed down inside it by the same
//     rule.
//  3. Remainders (remainder.go), when a unit is set. Allocations are rounded
//     down to the unit; bottom-up, each node collects the fractions its
//     subtree recovered and deals the whole units out round-robin (at most
//     max(1, floor(units/candidates)) each per pass) to itself and its
//     accepting children that can take a whole unit: larger quota first,
//     then larger unmet demand, then name order. Units a child gets are
//     dealt on down its subtree at once by the same rule; what nobody can
//     take, whole units and fractions, goes up, and from the root into the
//     leftover.
//
// The pool is conserved: pool = Σ allocated + Σ held + leftover, where held
// is the unused quota non_shared keeps back and what a group's non-shared
// keeps in its subtree (neither allocated nor passed up). Every allocation is at most its node's demand, every subtree within
// its limit, and a subtree that accepts no surplus within its subtree quota.
//
// # Exact arithmetic
//
// Credits are never float: HTCondor loses a whole slot to float rounding
// on 0.1/0.2/0.7 of 7. Amounts are rationals (num.go): two int64s while
// they fit, which is nearly always and allocates nothing, and a big.Rat
// when they do not. Step 2's "share in proportion to quota, and again while
// someone is capped" is solved as one sorted water-fill per level, which
// is the loop's exact fixed point; the hand-down is deferred to one
// top-down pass, which gives the same result as HTCondor's eager
// recursion because water-filling composes. A whole computation is
// O(n log n); TestComputeMatchesLiteral checks it against a word-for-word
// transcription of the rules.
//
// The share tree (sharetree.go) is float64 on purpose: its numbers are
// priorities, not credits, Grid Engine computes them in double precision,
// and 0.5^(t/H) has no exact value to keep.
//
// # Using it
//
// Compute runs everything once. A ledger keeps a Plan per account instead:
// NewPlan validates the tree and does step 1 and step 2's bottom-up pass;
// SetDemand updates one demand by redoing its path to the root;
// Available answers DESIGN's available(p) from one path; Allocate gives
// every allocation, and its Result's Shortfalls and Warnings the nodes
// left short of their ownership, group non-shared or non_shared.
// DecodeInput and Result.EncodeJSON are the file format of `ingot hfs
// compute`. Entitlements and Decay are the share tree.
//
// # Preemption
//
// Plan.Preempt (preempt.go) names the running jobs to release so that a
// lien the free credits cannot hold fits: LSF's project-group preemption
// with credits for tokens, in-use being a subtree's demand. Its rules and
// the order of taking are in its comment; Rank is the priority order.
// It changes nothing: it tries releases on a copy of the plan's states,
// and reads only the jobs of the nodes it takes from.
//
// # Choices where DESIGN is silent
//
//   - The root takes the pool and may not have a quota; its limit, if any,
//     caps the pool and the cut is left over.
//   - Share children whose weights sum to 0 get nothing; the rest stays with
//     the parent.
//   - non_shared above the node's own quota is not refused here (own quota
//     moves with the pool, and the carve may take it): it holds at most
//     the own quota, all of it while unused, and Result.Shortfalls names
//     the node. Refusing it when set is ledger policy.
//   - Static quotas over-subscribing a level are scaled down to fit, as
//     DESIGN says; level by level applies to the carve only. A static
//     child's quota is part of its parent's, so static quotas are
//     satisfied from the top anyway; ownership and group non-shared add
//     up over levels, which is why they need the rule.
//   - The node itself counts as a zero-quota candidate when its own quota
//     is 0; in step 3 its "quota" is its own quota and a child's "unmet
//     demand" is the whole units its subtree can take (demands and limits
//     above 2^62 units compare equal).
//   - Available is worked exactly, then rounded down to the unit when there
//     is one: a lien within it is granted under the rounded rule too.
//   - The share tree: a node is active when it or a descendant has active
//     jobs; usage rolls up from all children, active or not; a node with no
//     long-term entitlement gets no short-term one; the compensation factor
//     is applied once. A node's own jobs draw on its whole subtree's
//     entitlement: Grid Engine only puts jobs on leaves, so an internal
//     node's own jobs have no better-founded share.
package hfs
