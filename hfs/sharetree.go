package hfs

import (
	"fmt"
	"math"
	"time"
)

// The share tree works in float64, unlike the allocation above it: its
// numbers are priorities, not credits (no balance or total depends on
// them, so nothing is there to conserve), Grid Engine itself computes them
// in double precision, and 0.5^(t/H) has no exact rational value to keep.

// ShareNode is a node of a Grid Engine share tree.
type ShareNode struct {
	Name   string
	Shares float64
	// Usage is the node's own accumulated usage as of UsageAt; it is
	// decayed from then to the time Entitlements is asked about.
	Usage   float64
	UsageAt time.Time
	// ActiveJobs is the number of the node's own jobs running or waiting.
	// A node is active when it or a descendant has active jobs; only
	// active nodes are entitled to anything.
	ActiveJobs int
	Children   []*ShareNode
}

// Entitlement is a node's standing in the share tree. Every value is 0 for
// an inactive node but Usage.
type Entitlement struct {
	// Usage is the subtree's usage, decayed to now: the node's own plus
	// its children's.
	Usage float64
	// Active says whether the node or a descendant has active jobs.
	Active bool
	// LongTerm (Grid Engine's ltt) is shares / Σ shares of the active
	// siblings.
	LongTerm float64
	// OverallLongTerm (oltt) is LongTerm multiplied down from the root: the
	// node's long-term target share of the whole tree.
	OverallLongTerm float64
	// ShortTerm (stt) is the node's part of its parent's short-term
	// entitlement: shares² / max(Usage, OverallLongTerm), normalised among
	// the active siblings, then compensated (see Entitlements).
	ShortTerm float64
	// OverallShortTerm (ostt) is ShortTerm multiplied down from the root:
	// the node's short-term entitlement, which is what Grid Engine hands
	// share-tree tickets out by.
	OverallShortTerm float64
	// JobPriority is OverallShortTerm divided among the node's own active
	// jobs (0 without any), as Grid Engine divides a node's tickets among
	// its jobs: a scheduler orders jobs by it, largest first.
	JobPriority float64
}

// Decay is usage after elapsed time with the given half-life:
// usage · 0.5^(elapsed/halfLife), the exact exponential. A half-life of 0
// means no decay, and so does a negative elapsed time (usage recorded in
// the future is not grown).
func Decay(usage float64, elapsed, halfLife time.Duration) float64 {
	if halfLife <= 0 || elapsed <= 0 {
		return usage
	}
	return usage * math.Exp2(-elapsed.Seconds()/halfLife.Seconds())
}

// Entitlements works out every node's entitlement at time now, keyed by
// name. Usage decays with halfLife (0: no decay).
//
// cf is Grid Engine's compensation factor (0 turns it off). After a first
// pass, a node whose OverallShortTerm is above cf·OverallLongTerm has its
// shares²/usage weight divided by OverallShortTerm/(cf·OverallLongTerm),
// and the siblings are normalised again, once. That damps a node that got
// far more than its long-term target but does not cap it there: with
// cf = 1 a node with no usage still gets most of the short-term
// entitlement (testdata/hfs/sharetree-cases.json, ST-E1).
func Entitlements(root *ShareNode, now time.Time, halfLife time.Duration, cf float64) (map[string]Entitlement, error) {
	if halfLife < 0 {
		return nil, fmt.Errorf("%w: half-life %s", ErrNegative, halfLife)
	}
	if math.IsNaN(cf) || math.IsInf(cf, 0) {
		return nil, fmt.Errorf("%w: compensation factor %v", ErrNotFinite, cf)
	}
	if cf < 0 {
		return nil, fmt.Errorf("%w: compensation factor %v", ErrNegative, cf)
	}
	if root == nil {
		return nil, ErrNilNode
	}
	e := entitler{out: make(map[string]Entitlement), now: now, halfLife: halfLife, cf: cf}
	if err := e.usage(root); err != nil {
		return nil, err
	}
	if r := e.out[root.Name]; r.Active {
		r.LongTerm, r.OverallLongTerm, r.ShortTerm, r.OverallShortTerm = 1, 1, 1, 1
		r.JobPriority = jobPriority(r.OverallShortTerm, root.ActiveJobs)
		e.out[root.Name] = r
		e.divide(root)
	}
	return e.out, nil
}

type entitler struct {
	out      map[string]Entitlement
	now      time.Time
	halfLife time.Duration
	cf       float64
}

// usage validates n's subtree and records each node's decayed, rolled-up
// usage and whether it is active.
func (e *entitler) usage(n *ShareNode) error {
	if err := validateShareNode(n); err != nil {
		return err
	}
	if _, dup := e.out[n.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateName, n.Name)
	}
	ent := Entitlement{Usage: Decay(n.Usage, e.now.Sub(n.UsageAt), e.halfLife), Active: n.ActiveJobs > 0}
	e.out[n.Name] = ent // taken, before the children can claim the name
	for _, c := range n.Children {
		if c == nil {
			return fmt.Errorf("%w: a child of %q", ErrNilNode, n.Name)
		}
		if err := e.usage(c); err != nil {
			return err
		}
		ent.Usage += e.out[c.Name].Usage
		ent.Active = ent.Active || e.out[c.Name].Active
	}
	e.out[n.Name] = ent
	return nil
}

func validateShareNode(n *ShareNode) error {
	if n.Name == "" {
		return ErrEmptyName
	}
	for _, f := range []struct {
		what  string
		value float64
	}{{"shares", n.Shares}, {"usage", n.Usage}, {"active jobs", float64(n.ActiveJobs)}} {
		if math.IsNaN(f.value) || math.IsInf(f.value, 0) {
			return fmt.Errorf("%w: node %q %s %v", ErrNotFinite, n.Name, f.what, f.value)
		}
		if f.value < 0 {
			return fmt.Errorf("%w: node %q %s %v", ErrNegative, n.Name, f.what, f.value)
		}
	}
	return nil
}

// divide works out the entitlements of n's active children from n's, then
// recurses into them.
func (e *entitler) divide(n *ShareNode) {
	parent := e.out[n.Name]
	var active []*ShareNode
	sumShares := 0.0
	for _, c := range n.Children {
		if e.out[c.Name].Active {
			active = append(active, c)
			sumShares += c.Shares
		}
	}
	if len(active) == 0 {
		return
	}

	ents := make([]Entitlement, len(active))
	weights := make([]float64, len(active))
	for k, c := range active {
		ent := e.out[c.Name]
		if sumShares > 0 {
			ent.LongTerm = c.Shares / sumShares
		}
		ent.OverallLongTerm = ent.LongTerm * parent.OverallLongTerm
		// A node with no long-term entitlement gets no short-term one
		// either (its weight would be 0/0 when it has no usage).
		if ent.OverallLongTerm > 0 {
			weights[k] = c.Shares * c.Shares / math.Max(ent.Usage, ent.OverallLongTerm)
		}
		ents[k] = ent
	}
	normalise(ents, weights, parent.OverallShortTerm)

	if e.cf > 0 {
		compensated := false
		for k := range ents {
			if target := e.cf * ents[k].OverallLongTerm; ents[k].OverallShortTerm > target {
				weights[k] /= ents[k].OverallShortTerm / target
				compensated = true
			}
		}
		if compensated {
			normalise(ents, weights, parent.OverallShortTerm)
		}
	}

	for k, c := range active {
		ents[k].JobPriority = jobPriority(ents[k].OverallShortTerm, c.ActiveJobs)
		e.out[c.Name] = ents[k]
		e.divide(c)
	}
}

// normalise sets each sibling's short-term entitlement from the weights.
func normalise(ents []Entitlement, weights []float64, parentShortTerm float64) {
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	for k := range ents {
		ents[k].ShortTerm = 0
		if sum > 0 {
			ents[k].ShortTerm = weights[k] / sum
		}
		ents[k].OverallShortTerm = ents[k].ShortTerm * parentShortTerm
	}
}

func jobPriority(overallShortTerm float64, jobs int) float64 {
	if jobs == 0 {
		return 0
	}
	return overallShortTerm / float64(jobs)
}
