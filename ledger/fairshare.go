package ledger

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/hfs"
)

// FairShareNode is one node's standing in its account's share tree (Grid
// Engine's share-tree policy), which a scheduler can order jobs by.
type FairShareNode struct {
	Name string `json:"name"`
	// Shares are the node's quota value (shares, fraction or credits, as
	// its policy gives it; 0 without a quota).
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
func (l *Ledger) FairShare(account string, halfLife time.Duration, cf float64) ([]FairShareNode, error) {
	if halfLife < 0 || cf < 0 {
		return nil, fmt.Errorf("%w: fair share: half-life %s and compensation factor %g must not be negative", ErrInvalid, halfLife, cf)
	}
	var out []FairShareNode
	err := l.store.View(func(tx Tx) error {
		nodes, err := tx.Subtree(account)
		if err != nil {
			return err
		}
		if len(nodes) == 0 || !nodes[0].IsAccount() {
			return fmt.Errorf("%w: %q is not an account", ErrNotFound, account)
		}
		now := l.Now()
		usage := map[string]float64{}
		charges, err := tx.Charges()
		if err != nil {
			return err
		}
		for _, c := range charges {
			if c.Account == account {
				net := c.Amount.Sub(c.Refunded).InexactFloat64()
				usage[c.Project] += hfs.Decay(net, now.Sub(c.Time), halfLife)
			}
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
		byName := map[string]*hfs.ShareNode{}
		var root *hfs.ShareNode
		for _, n := range nodes {
			sn := &hfs.ShareNode{Name: n.Name, Shares: n.Policy.Quota.InexactFloat64(), Usage: usage[n.Name], UsageAt: now, ActiveJobs: jobs[n.Name]}
			byName[n.Name] = sn
			if parent := byName[ParentOf(n.Name)]; parent != nil {
				parent.Children = append(parent.Children, sn)
			} else {
				sn.Shares = 1 // the account is the whole tree
				root = sn
			}
		}
		ents, err := hfs.Entitlements(root, now, halfLife, cf)
		if err != nil {
			return fmt.Errorf("%w: fair share of %s: %v", ErrInvalid, account, err)
		}
		for _, n := range nodes {
			e := ents[n.Name]
			out = append(out, FairShareNode{Name: n.Name, Shares: n.Policy.Quota, Usage: e.Usage, Active: e.Active,
				Target: e.OverallLongTerm, ShortTerm: e.OverallShortTerm, Priority: e.JobPriority})
		}
		return nil
	})
	return out, err
}
