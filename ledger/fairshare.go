package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/hfs"
)

// FairShareNode is one node's standing in its account's share tree (Grid
// Engine's share-tree policy), which a scheduler can order jobs by.
type FairShareNode struct {
	Name string `json:"name"`
	// Shares are the node's weight: the credits its subtree's HFS quotas
	// come to (the whole pool for the account), or 1 for every node when
	// the account has no HFS policy.
	Shares decimal.Decimal `json:"shares"`
	// Usage is the subtree's charged credits, decayed to now.
	Usage float64 `json:"usage"`
	// Active says whether the node or a descendant has an active lien.
	Active bool `json:"active"`
	// Target is the long-term share of the whole account (Grid Engine's
	// oltt), ShortTerm the short-term entitlement (ostt), Priority the
	// short-term entitlement per own active job (0 without one).
	Target    float64 `json:"target_share"`
	ShortTerm float64 `json:"short_term_entitlement"`
	Priority  float64 `json:"priority"`
}

// FairShare works out the share tree of an account now: charges are usage,
// decayed with halfLife (0: no decay); active liens are active jobs; cf is
// Grid Engine's compensation factor (0: off). Usage and entitlements are
// priorities, not credits, so they are floating point (see package hfs).
func (l *Ledger) FairShare(ctx context.Context, account string, halfLife time.Duration, cf float64) ([]FairShareNode, error) {
	if halfLife < 0 || cf < 0 {
		return nil, fmt.Errorf("%w: fair share: half-life %s and compensation factor %g must not be negative", ErrInvalid, halfLife, cf)
	}
	var out []FairShareNode
	err := l.store.View(ctx, func(tx Tx) error {
		nodes, err := tx.Subtree(account)
		if err != nil {
			return err
		}
		if len(nodes) == 0 || !nodes[0].IsAccount() {
			return fmt.Errorf("%w: %s is not an account", ErrNotFound, Excerpt(account))
		}
		now := l.Now()
		usage := map[string]float64{}
		err = tx.Charges(func(c Charge) (bool, error) {
			if c.Account == account {
				net := c.Amount.Sub(c.Refunded).InexactFloat64()
				usage[c.Project] += hfs.Decay(net, now.Sub(c.Time), halfLife)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		jobs := map[string]int{}
		liens, err := tx.ActiveLiens(account)
		if err != nil {
			return err
		}
		for _, li := range liens {
			if li.HoldsAt(now) {
				jobs[li.Project]++
			}
		}
		shares, err := shareWeights(tx, account, now, l.settings.Precision)
		if err != nil {
			return err
		}
		byName := map[string]*hfs.ShareNode{}
		var root *hfs.ShareNode
		for _, n := range nodes {
			sn := &hfs.ShareNode{Name: n.Name, Shares: shares[n.Name].InexactFloat64(), Usage: usage[n.Name], UsageAt: now, ActiveJobs: jobs[n.Name]}
			byName[n.Name] = sn
			if parent := byName[ParentOf(n.Name)]; parent != nil {
				parent.Children = append(parent.Children, sn)
			} else {
				root = sn
			}
		}
		ents, err := hfs.Entitlements(root, now, halfLife, cf)
		if err != nil {
			return fmt.Errorf("%w: fair share of %s: %v", ErrInvalid, account, err)
		}
		for _, n := range nodes {
			e := ents[n.Name]
			out = append(out, FairShareNode{Name: n.Name, Shares: shares[n.Name], Usage: e.Usage, Active: e.Active,
				Target: e.OverallLongTerm, ShortTerm: e.OverallShortTerm, Priority: e.JobPriority})
		}
		return nil
	})
	return out, err
}

// shareWeights gives each node of an account its share-tree weight: its
// subtree's quota after HFS step 1, which puts static, dynamic and share
// quotas on one scale (credits); 1 each when HFS is off.
func shareWeights(tx Tx, account string, now time.Time, precision int32) (map[string]decimal.Decimal, error) {
	st, err := readAccountState(tx, account)
	if err != nil {
		return nil, err
	}
	s, err := loadShares(tx, st, account, now, nil, nil)
	if err != nil {
		return nil, err
	}
	weights := map[string]decimal.Decimal{}
	if !s.hfsOn {
		for _, n := range s.nodes {
			weights[n.Name] = decimal.NewFromInt(1)
		}
		return weights, nil
	}
	plan, err := s.plan(precision)
	if err != nil {
		return nil, err
	}
	result := plan.Allocate()
	// Names sort parents before children, so in reverse every node's
	// subtree is complete when it is added to its parent.
	for i := len(s.nodes) - 1; i >= 0; i-- {
		name := s.nodes[i].Name
		weights[name] = weights[name].Add(decimal.NewFromBigRat(result.Quota(name), precision))
		if parent := ParentOf(name); parent != "" {
			weights[parent] = weights[parent].Add(weights[name])
		}
	}
	return weights, nil
}
