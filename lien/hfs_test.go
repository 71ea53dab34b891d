package lien_test

import (
	"context"
	"errors"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/hfs"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// physicsSite is an account phys with 10000 credits and two labs of half
// each; lab2 accepts surplus, lab1 does not.
func physicsSite(t *testing.T) *site {
	s := newSite(t)
	s.MustNode("phys", "phys.lab1", "phys.lab2")
	for _, p := range []struct {
		name    string
		surplus bool
	}{{"phys.lab1", false}, {"phys.lab2", true}} {
		policy := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.5"), AcceptSurplus: p.surplus}
		if _, err := s.ModifyNode(context.Background(), s.Req(), p.name, ledger.NodeChange{Policy: &policy}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ModifyUser(context.Background(), s.Req(), "amy", ledger.UserChange{Add: []ledger.Membership{{Node: "phys", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	s.MustDeposit("phys", "10000", time.Time{})
	return s
}

func (s *site) placeOn(project, id string, credits int64) (lien.LienResult, error) {
	return s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job(id), User: "amy", Project: project, Request: request(1, credits)})
}

func TestHFSRefusesAtQuota(t *testing.T) {
	s := physicsSite(t)
	if _, err := s.placeOn("phys.lab1", "a", 5000); err != nil {
		t.Fatalf("lien up to the quota: %v", err)
	}
	before := s.JournalLen()
	_, err := s.placeOn("phys.lab1", "b", 1)
	if !errors.Is(err, ledger.ErrInsufficientFunds) || !strings.Contains(err.Error(), "HFS share") {
		t.Fatalf("lien beyond the quota: %v", err)
	}
	if s.JournalLen() != before {
		t.Error("the refused lien wrote to the journal")
	}
	// The account still has credits: they are lab2's.
	wantAmount(t, "account available", s.MustBalance("phys").Available, "5000")
}

func TestHFSSurplusGoesToWhoAcceptsIt(t *testing.T) {
	s := physicsSite(t)
	if _, err := s.placeOn("phys.lab1", "a", 2000); err != nil {
		t.Fatal(err)
	}
	// lab1 leaves 3000 of its quota unused; lab2 accepts surplus: 5000 + 3000.
	if _, err := s.placeOn("phys.lab2", "b", 8000); err != nil {
		t.Fatalf("lab2 borrowing lab1's surplus: %v", err)
	}
	if _, err := s.placeOn("phys.lab2", "c", 1); !errors.Is(err, ledger.ErrInsufficientFunds) {
		t.Errorf("lab2 beyond quota and surplus: %v", err)
	}
	shares, err := s.Shares(context.Background(), "phys")
	if err != nil {
		t.Fatal(err)
	}
	if !shares.HFS || !shares.Pool.Equal(dec("10000")) {
		t.Fatalf("shares = %+v", shares)
	}
	// The same numbers through hfs.Compute, as `ingot hfs compute` runs them.
	r, err := hfs.Compute(big.NewRat(10000, 1), big.NewRat(1, 100), &hfs.Node{Name: "phys", Demand: new(big.Rat), Children: []*hfs.Node{
		{Name: "phys.lab1", Quota: hfs.Quota{Kind: hfs.Dynamic, Value: big.NewRat(1, 2)}, Demand: big.NewRat(2000, 1)},
		{Name: "phys.lab2", Quota: hfs.Quota{Kind: hfs.Dynamic, Value: big.NewRat(1, 2)}, Demand: big.NewRat(8000, 1), AcceptSurplus: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range shares.Nodes {
		want := r.Allocated(n.Name).FloatString(2)
		if n.Allocated.StringFixed(2) != want {
			t.Errorf("%s allocated %s in the bank, %s by hfs.Compute", n.Name, n.Allocated, want)
		}
	}
	byName := map[string]ledger.NodeShare{}
	for _, n := range shares.Nodes {
		byName[n.Name] = n
	}
	wantAmount(t, "lab1 quota", byName["phys.lab1"].Quota, "5000")
	wantAmount(t, "lab1 reserved", byName["phys.lab1"].Reserved, "2000")
	wantAmount(t, "lab2 allocated", byName["phys.lab2"].Allocated, "8000")
	wantAmount(t, "lab2 available", byName["phys.lab2"].Available, "0")
}

func TestHFSChargesCountAsDemand(t *testing.T) {
	s := physicsSite(t)
	if _, err := s.placeOn("phys.lab1", "a", 4000); err != nil {
		t.Fatal(err)
	}
	s.mustCharge(lien.ChargeSpec{Job: job("a"), Usage: s.usage(1, 4000, 4000, 0, 1)})
	// lab1 used 4000 of its 5000; the pool is still 10000 (used counts in it).
	if _, err := s.placeOn("phys.lab1", "b", 1001); !errors.Is(err, ledger.ErrInsufficientFunds) {
		t.Errorf("lab1 beyond its quota after a charge: %v", err)
	}
	if _, err := s.placeOn("phys.lab1", "b", 1000); err != nil {
		t.Errorf("lab1 up to its quota after a charge: %v", err)
	}
}

func TestFairShare(t *testing.T) {
	s := physicsSite(t)
	if _, err := s.placeOn("phys.lab1", "a", 3000); err != nil {
		t.Fatal(err)
	}
	s.mustCharge(lien.ChargeSpec{Job: job("a"), Usage: s.usage(1, 3000, 3000, 0, 1)})
	if _, err := s.placeOn("phys.lab1", "b", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.placeOn("phys.lab2", "c", 100); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(7 * 24 * time.Hour) // one half-life
	// The liens above expired; place fresh ones so that both labs are active.
	for _, p := range []struct{ project, id string }{{"phys.lab1", "d"}, {"phys.lab2", "e"}} {
		if _, err := s.placeOn(p.project, p.id, 100); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := s.FairShare(context.Background(), "phys", 7*24*time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ledger.FairShareNode{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	lab1, lab2 := byName["phys.lab1"], byName["phys.lab2"]
	if lab1.Usage < 1499.99 || lab1.Usage > 1500.01 || lab2.Usage != 0 {
		t.Errorf("decayed usage: lab1 %g (want 1500, half of 3000), lab2 %g", lab1.Usage, lab2.Usage)
	}
	if lab1.Target != 0.5 || lab2.Target != 0.5 || !lab1.Active || !lab2.Active {
		t.Errorf("targets: %+v %+v", lab1, lab2)
	}
	// lab1 used far more than lab2, so lab2 is entitled to more now.
	if !(lab2.ShortTerm > lab1.ShortTerm && lab2.Priority > lab1.Priority) {
		t.Errorf("short-term: lab1 %+v, lab2 %+v", lab1, lab2)
	}
	if _, err := s.FairShare(context.Background(), "phys.lab1", 0, 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("fair share of a project: %v", err)
	}
}

// TestSharesWithProposedQuota: the split with a proposed quota (the web
// page's preview, `ingot hfs show --with`) changes and journals nothing,
// is the split that setting the quota then gives, and a quota ModifyNode
// refuses is refused in its words.
func TestSharesWithProposedQuota(t *testing.T) {
	s := physicsSite(t)
	ctx := context.Background()
	if _, err := s.placeOn("phys.lab1", "a", 2000); err != nil {
		t.Fatal(err)
	}
	before, err := s.Shares(ctx, "phys")
	if err != nil {
		t.Fatal(err)
	}
	journal := s.JournalLen()
	change, err := ledger.ParseQuotaChange("phys.lab1=dynamic:0.8")
	if err != nil {
		t.Fatal(err)
	}
	preview, err := s.Shares(ctx, "phys", change)
	if err != nil {
		t.Fatal(err)
	}
	if s.JournalLen() != journal {
		t.Fatal("the preview wrote to the journal")
	}
	if now, err := s.Shares(ctx, "phys"); err != nil || !sameSplit(now, before) {
		t.Fatalf("the preview changed the split: %+v, %v", now, err)
	}
	wantAmount(t, "lab1's quota in the preview", preview.Nodes[1].Quota, "6153.85") // 0.8 of 0.8 + 0.5
	wantAmount(t, "lab2's quota in the preview", preview.Nodes[2].Quota, "3846.15")
	policy := before.Nodes[1].Policy
	policy.QuotaKind, policy.Quota = change.Kind, change.Quota
	if _, err := s.ModifyNode(ctx, s.Req(), "phys.lab1", ledger.NodeChange{Policy: &policy}); err != nil {
		t.Fatal(err)
	}
	after, err := s.Shares(ctx, "phys")
	if err != nil {
		t.Fatal(err)
	}
	if !sameSplit(preview, after) {
		t.Errorf("the preview\n%+v\nis not the split after the change\n%+v", preview, after)
	}

	for _, text := range []string{"phys.lab1=dynamic:1.5", "phys.lab1=weight:2", "phys=static:5"} {
		bad, err := ledger.ParseQuotaChange(text)
		if err != nil {
			t.Fatal(err)
		}
		_, previewErr := s.Shares(ctx, "phys", bad)
		p := after.Nodes[slices.IndexFunc(after.Nodes, func(n ledger.NodeShare) bool { return n.Name == bad.Node })].Policy
		p.QuotaKind, p.Quota = bad.Kind, bad.Quota
		_, modifyErr := s.ModifyNode(ctx, s.Req(), bad.Node, ledger.NodeChange{Policy: &p})
		if previewErr == nil || modifyErr == nil || previewErr.Error() != modifyErr.Error() {
			t.Errorf("%s: the preview says %v, the change %v", text, previewErr, modifyErr)
		}
	}
	if _, err := s.Shares(ctx, "phys", ledger.QuotaChange{Node: "chem.lab1", Kind: ledger.QuotaShares, Quota: dec("1")}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a quota proposed outside the account's tree: %v", err)
	}
}

// sameSplit compares two splits but for their times.
func sameSplit(a, b ledger.AccountShares) bool {
	a.At, b.At = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}
