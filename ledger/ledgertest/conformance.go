package ledgertest

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// Conformance runs the ledger's behaviour suite on a store engine. Every
// engine must pass it unchanged; each scenario ends with an audit.
func Conformance(t *testing.T, open OpenStore) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, OpenStore)
	}{
		{"Nodes", testNodes},
		{"Policies", testPolicies},
		{"NewProjectInHFSAccountNeedsQuota", testNewProjectQuota},
		{"Reactivate", testReactivate},
		{"UsersAndMachines", testUsersAndMachines},
		{"DepositRefusals", testDepositRefusals},
		{"DepositAndTopUp", testDepositAndTopUp},
		{"WithdrawDebitOrder", testWithdrawDebitOrder},
		{"WithdrawCreditLimit", testWithdrawCreditLimit},
		{"ExpiredAllocationsDoNotCount", testExpired},
		{"LiveAllocations", testLiveAllocations},
		{"ActiveAllocations", testActiveAllocations},
		{"UsedUpAllocations", testUsedUpAllocations},
		{"Transfer", testTransfer},
		{"MoveRefusals", testMoveRefusals},
		{"BalanceAtTime", testBalanceAtTime},
		{"BalanceListsTheNextUpcoming", testBalanceUpcoming},
		{"BalanceListsTheFirstUsedUp", testBalanceUsedUp},
		{"ProjectBalanceIsItsShare", testProjectBalanceIsItsShare},
		{"Statement", testStatement},
		{"JournalFilter", testJournalFilter},
		{"Idempotency", testIdempotency},
		{"ConcurrentDeposits", testConcurrentDeposits},
		{"ConcurrentWithdrawalsStopAtAvailable", testConcurrentWithdrawals},
		{"AuditFindsTampering", testAuditFindsTampering},
		{"Precision", testPrecision},
		{"KeptAnswers", testKeptAnswers},
		{"LienAndChargeIndexes", testLienAndChargeIndexes},
		{"FailedCallLeavesNoWrites", testFailedCallLeavesNoWrites},
		{"PrunedRequests", testPrunedRequests},
		{"IDsGoOnFromStoredOnes", testIDsGoOn},
		{"CarriedRecords", testCarriedRecords},
		{"Copy", testCopy},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open) })
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func wantAmount(t *testing.T, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(Dec(t, want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// refusedWritesNothing checks that a refused call left the journal as it was.
func refusedWritesNothing(t *testing.T, b *Bank, target error, call func() error) {
	t.Helper()
	before := b.JournalLen()
	wantErr(t, call(), target)
	if after := b.JournalLen(); after != before {
		t.Fatalf("refused call wrote %d journal entries", after-before)
	}
}

func testNodes(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "chem.lab1.spectra", "bio")
	for _, tc := range []struct {
		name, node string
		want       error
	}{
		{"duplicate", "chem", ledger.ErrExists},
		{"uppercase", "Chem2", ledger.ErrInvalid},
		{"space", "chem lab", ledger.ErrInvalid},
		{"empty component", "chem..x", ledger.ErrInvalid},
		{"leading dash", "-x", ledger.ErrInvalid},
		{"empty", "", ledger.ErrInvalid},
		{"missing parent", "phys.lab1", ledger.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWritesNothing(t, b, tc.want, func() error {
				_, err := b.CreateNode(context.Background(), b.Req(), ledger.NodeSpec{Name: tc.node})
				return err
			})
		})
	}
	if _, err := b.DeactivateNode(context.Background(), b.Req(), "chem.lab1"); err != nil {
		t.Fatal(err)
	}
	refusedWritesNothing(t, b, ledger.ErrInactive, func() error {
		_, err := b.CreateNode(context.Background(), b.Req(), ledger.NodeSpec{Name: "chem.lab1.new"})
		return err
	})
	// A node inside a deactivated one is inactive too.
	refusedWritesNothing(t, b, ledger.ErrInactive, func() error {
		_, err := b.AddUser(context.Background(), b.Req(), ledger.UserSpec{Name: "x", Memberships: []ledger.Membership{{Node: "chem.lab1.spectra", Role: ledger.RoleMember}}})
		return err
	})
	// A deactivated node can still be modified (to release its HFS quota).
	none := ledger.Policy{}
	if _, err := b.ModifyNode(context.Background(), b.Req(), "chem.lab1", ledger.NodeChange{Policy: &none}); err != nil {
		t.Errorf("modify a deactivated node: %v", err)
	}
	nodes, err := b.Nodes(context.Background(), "chem")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[0].Name != "chem" || nodes[1].Name != "chem.lab1" || nodes[1].Active {
		t.Errorf("nodes under chem = %+v", nodes)
	}
}

func testPolicies(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("phys", "phys.lab1")
	lim := Dec(t, "-1")
	for _, tc := range []struct {
		name string
		node string
		p    ledger.Policy
	}{
		{"fraction above 1", "phys.lab1", ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "1.5")}},
		{"negative fraction", "phys.lab1", ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "-0.1")}},
		{"negative static", "phys.lab1", ledger.Policy{QuotaKind: ledger.QuotaStatic, Quota: Dec(t, "-5")}},
		{"negative limit", "phys.lab1", ledger.Policy{Limit: &lim}},
		{"non_shared above quota", "phys.lab1", ledger.Policy{QuotaKind: ledger.QuotaStatic, Quota: Dec(t, "5"), NonShared: Dec(t, "6")}},
		{"unknown kind", "phys.lab1", ledger.Policy{QuotaKind: "fixed", Quota: Dec(t, "5")}},
		{"quota on an account", "phys", ledger.Policy{QuotaKind: ledger.QuotaStatic, Quota: Dec(t, "5")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWritesNothing(t, b, ledger.ErrInvalid, func() error {
				_, err := b.ModifyNode(context.Background(), b.Req(), tc.node, ledger.NodeChange{Policy: &tc.p})
				return err
			})
		})
	}
	// non_shared against a dynamic quota is checked on the pool: half of 1000.
	b.MustDeposit("phys", "1000", time.Time{})
	refusedWritesNothing(t, b, ledger.ErrInvalid, func() error {
		p := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "0.5"), NonShared: Dec(t, "500.01")}
		_, err := b.ModifyNode(context.Background(), b.Req(), "phys.lab1", ledger.NodeChange{Policy: &p})
		return err
	})
	refusedWritesNothing(t, b, ledger.ErrNotFound, func() error {
		p := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "0.5")}
		_, err := b.ModifyNode(context.Background(), b.Req(), "phys.nope", ledger.NodeChange{Policy: &p})
		return err
	})
	p := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "0.5"), AcceptSurplus: true, NonShared: Dec(t, "500")}
	n, err := b.ModifyNode(context.Background(), b.Req(), "phys.lab1", ledger.NodeChange{Policy: &p})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Node(context.Background(), "phys.lab1"); !got.Policy.Quota.Equal(n.Policy.Quota) || !got.Policy.AcceptSurplus {
		t.Errorf("stored policy = %+v", got.Policy)
	}
}

// testNewProjectQuota: in an account split by HFS, a project made without
// a quota would get nothing of its own, and its jobs would be refused
// however much the account holds: it is refused unless NoQuota says it
// is meant. An account without any HFS policy is not split, and takes
// projects without quotas as before.
// testProjectBalanceIsItsShare: a project's Available is what a lien on
// it would get now, its HFS share, with the account's figure beside it
// where they differ; an account's, and a past balance, are Gold's figures.
func testProjectBalanceIsItsShare(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "bio", "bio.x")
	for name, q := range map[string]string{"chem.a": "0.6", "chem.b": "0.4"} {
		p := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, q)}
		if _, err := b.CreateNode(context.Background(), b.Req(), ledger.NodeSpec{Name: name, Policy: p}); err != nil {
			t.Fatal(err)
		}
	}
	b.MustDeposit("chem", "1000", time.Time{})
	b.MustDeposit("bio", "100", time.Time{})
	before := b.Clock.Now()
	b.Clock.Advance(time.Second)
	b.MustDeposit("chem", "1000", time.Time{})
	for _, tc := range []struct {
		node, available, account string
	}{
		{"chem.a", "1200", "2000"},
		{"chem.b", "800", "2000"},
		{"chem", "2000", ""},
		{"bio.x", "100", ""}, // bio has no HFS policies: the account's figure
	} {
		nb := b.MustBalance(tc.node)
		got := ""
		if nb.AccountAvailable != nil {
			got = nb.AccountAvailable.String()
		}
		if !nb.Available.Equal(Dec(t, tc.available)) || got != tc.account {
			t.Errorf("%s: available %s, account's %q; want %s, %q", tc.node, nb.Available, got, tc.available, tc.account)
		}
		lien, err := b.Available(context.Background(), tc.node)
		if err != nil || !lien.Equal(nb.Available) {
			t.Errorf("%s: its balance says %s available, a lien would get %s (%v)", tc.node, nb.Available, lien, err)
		}
	}
	past, err := b.BalanceAt(context.Background(), "chem.a", before)
	if err != nil || !past.Available.Equal(Dec(t, "1000")) || past.AccountAvailable != nil {
		t.Errorf("chem.a's past balance: %+v, %v; want the account's 1000", past.Balance, err)
	}
}

func testNewProjectQuota(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.a", "phys")
	b.MustDeposit("chem", "1000", time.Time{})
	create := func(spec ledger.NodeSpec) error {
		_, err := b.CreateNode(context.Background(), b.Req(), spec)
		return err
	}
	if err := create(ledger.NodeSpec{Name: "chem.b"}); err != nil {
		t.Fatalf("a project without a quota in an account without HFS: %v", err)
	}
	half := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "0.5")}
	if _, err := b.ModifyNode(context.Background(), b.Req(), "chem.a", ledger.NodeChange{Policy: &half}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec ledger.NodeSpec
	}{
		{"no quota", ledger.NodeSpec{Name: "chem.c"}},
		{"no quota below a project", ledger.NodeSpec{Name: "chem.a.x"}},
		{"surplus only, not said", ledger.NodeSpec{Name: "chem.c", Policy: ledger.Policy{AcceptSurplus: true}}},
		// Its own policy would split phys, with itself at nothing.
		{"the first policy of its account", ledger.NodeSpec{Name: "phys.x", Policy: ledger.Policy{Limit: ptr(Dec(t, "10"))}}},
		{"no_quota with a quota", ledger.NodeSpec{Name: "chem.c", NoQuota: true, Policy: half}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWritesNothing(t, b, ledger.ErrInvalid, func() error { return create(tc.spec) })
		})
	}
	for _, spec := range []ledger.NodeSpec{
		{Name: "chem.c", NoQuota: true},
		{Name: "chem.d", Policy: ledger.Policy{QuotaKind: ledger.QuotaShares, Quota: Dec(t, "1")}},
		{Name: "chem.a.x", Policy: ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: Dec(t, "1")}},
		{Name: "phys.x"},
		{Name: "bio"},
	} {
		if err := create(spec); err != nil {
			t.Errorf("create %s: %v", spec.Name, err)
		}
	}
	s, err := b.Shares(context.Background(), "chem")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		if want := map[string]string{"chem.c": "0", "chem.d": "500"}[n.Name]; want != "" {
			wantAmount(t, n.Name+" quota", n.Quota, want)
		}
	}
}

// testReactivate: a deactivated account or project is reactivated, with a
// journal entry of its own, and its subtree is usable again (but a node
// deactivated on its own stays so); a node inside a deactivated one is
// not reactivated before it; an active node is left as it is.
func testReactivate(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "chem.lab1.x", "chem.lab2")
	ctx := context.Background()
	for _, name := range []string{"chem.lab1", "chem.lab2", "chem"} {
		if _, err := b.DeactivateNode(ctx, b.Req(), name); err != nil {
			t.Fatal(err)
		}
	}
	refusedWritesNothing(t, b, ledger.ErrInactive, func() error {
		_, err := b.ReactivateNode(ctx, b.Req(), "chem.lab1")
		return err
	})
	refusedWritesNothing(t, b, ledger.ErrNotFound, func() error {
		_, err := b.ReactivateNode(ctx, b.Req(), "nope")
		return err
	})
	refusedWritesNothing(t, b, ledger.ErrInvalid, func() error {
		_, err := b.ReactivateNode(ctx, b.Req(), "Chem!")
		return err
	})
	for _, name := range []string{"chem", "chem.lab1"} {
		n, err := b.ReactivateNode(ctx, b.Req(), name)
		if err != nil || !n.Active {
			t.Fatalf("reactivate %s: %+v, %v", name, n, err)
		}
	}
	b.MustDeposit("chem", "10", time.Time{})
	b.MustNode("chem.lab1.y")
	refusedWritesNothing(t, b, ledger.ErrInactive, func() error {
		_, err := b.CreateNode(ctx, b.Req(), ledger.NodeSpec{Name: "chem.lab2.y"})
		return err
	})
	before := b.JournalLen()
	if n, err := b.ReactivateNode(ctx, b.Req(), "chem.lab1"); err != nil || !n.Active {
		t.Errorf("reactivate an active node: %+v, %v", n, err)
	}
	if after := b.JournalLen(); after != before {
		t.Errorf("reactivating an active node wrote %d entries", after-before)
	}
	es, err := b.Journal(ctx, ledger.JournalFilter{Kinds: []ledger.Kind{ledger.KindNodeReactivate}})
	if err != nil || len(es) != 2 || es[0].Node != "chem" || es[1].NodeState == nil || !es[1].NodeState.Active {
		t.Errorf("reactivations journaled: %+v, %v", es, err)
	}
}

func testUsersAndMachines(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "bio")
	u, err := b.AddUser(context.Background(), b.Req(), ledger.UserSpec{Name: "amy", DefaultProject: "chem.lab1",
		Memberships: []ledger.Membership{{Node: "chem", Role: ledger.RoleManager}}})
	if err != nil {
		t.Fatal(err)
	}
	if u.RoleIn("chem.lab1") != ledger.RoleManager || u.RoleIn("bio") != "" {
		t.Errorf("roles of amy: %+v", u.Memberships)
	}
	for _, tc := range []struct {
		name string
		spec ledger.UserSpec
		want error
	}{
		{"duplicate", ledger.UserSpec{Name: "amy"}, ledger.ErrExists},
		{"bad name", ledger.UserSpec{Name: "a b"}, ledger.ErrInvalid},
		{"default project not a member", ledger.UserSpec{Name: "bob", DefaultProject: "bio"}, ledger.ErrInvalid},
		{"unknown project", ledger.UserSpec{Name: "bob", Memberships: []ledger.Membership{{Node: "nope", Role: ledger.RoleMember}}}, ledger.ErrNotFound},
		{"bad role", ledger.UserSpec{Name: "bob", Memberships: []ledger.Membership{{Node: "bio", Role: "owner"}}}, ledger.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWritesNothing(t, b, tc.want, func() error {
				_, err := b.AddUser(context.Background(), b.Req(), tc.spec)
				return err
			})
		})
	}
	u, err = b.ModifyUser(context.Background(), b.Req(), "amy", ledger.UserChange{Add: []ledger.Membership{{Node: "bio", Role: ledger.RoleMember}}, Remove: []string{"chem"}, DefaultProject: ptr("bio")})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Memberships) != 1 || u.Memberships[0].Node != "bio" || u.DefaultProject != "bio" {
		t.Errorf("amy after modify: %+v", u)
	}
	if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 64, MemoryMB: 256000}}); err != nil {
		t.Fatal(err)
	}
	refusedWritesNothing(t, b, ledger.ErrExists, func() error {
		_, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc1"})
		return err
	})
	refusedWritesNothing(t, b, ledger.ErrInvalid, func() error {
		_, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc2", Shape: ledger.Shape{Cores: -1}})
		return err
	})
	m, err := b.ModifyMachine(context.Background(), b.Req(), "hpc1", ledger.MachineChange{Active: ptr(false)})
	if err != nil || m.Active {
		t.Fatalf("deactivate machine: %+v %v", m, err)
	}
	refusedWritesNothing(t, b, ledger.ErrInactive, func() error {
		_, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "5"), Machine: "hpc1"})
		return err
	})
}

func ptr[T any](v T) *T { return &v }

func testDepositRefusals(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "old")
	if _, err := b.DeactivateNode(context.Background(), b.Req(), "old"); err != nil {
		t.Fatal(err)
	}
	id := b.MustDeposit("chem", "10", time.Time{})
	b.MustNode("bio")
	other := b.MustDeposit("bio", "10", time.Time{})
	now := b.Clock.Now()
	ending := b.MustDeposit("chem", "10", now.Add(time.Hour))
	b.Clock.Advance(time.Hour)
	now = b.Clock.Now()
	for _, tc := range []struct {
		name string
		spec ledger.DepositSpec
		want error
	}{
		{"zero", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "0")}, ledger.ErrInvalid},
		{"negative", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "-5")}, ledger.ErrInvalid},
		{"too many decimals", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1.001")}, ledger.ErrInvalid},
		{"absurd", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1e16")}, ledger.ErrInvalid},
		{"negative credit limit", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), CreditLimit: Dec(t, "-1")}, ledger.ErrInvalid},
		{"unknown account", ledger.DepositSpec{Account: "nope", Amount: Dec(t, "1")}, ledger.ErrNotFound},
		{"inactive account", ledger.DepositSpec{Account: "old", Amount: Dec(t, "1")}, ledger.ErrInactive},
		{"project", ledger.DepositSpec{Account: "chem.lab1", Amount: Dec(t, "1")}, ledger.ErrInvalid},
		{"end before start", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: now, End: now.Add(-time.Hour)}, ledger.ErrInvalid},
		{"end equals start", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: now, End: now}, ledger.ErrInvalid},
		{"unknown machine", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Machine: "nope"}, ledger.ErrNotFound},
		{"top-up with terms", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Allocation: id, End: now.Add(time.Hour)}, ledger.ErrInvalid},
		{"top-up of another account's allocation", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Allocation: other}, ledger.ErrNotFound},
		// Credits that could never be spent: a typo in a year, not a grant.
		{"already ended", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: now.Add(-48 * time.Hour), End: now.Add(-24 * time.Hour)}, ledger.ErrInvalid},
		{"ends now", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), End: now}, ledger.ErrInvalid},
		{"top-up of an ended allocation", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Allocation: ending}, ledger.ErrInvalid},
		// Year 1 is Go's zero time, "not given": a start or end before
		// 1970 is a typo, refused rather than read as now or never.
		{"start in year 1", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)}, ledger.ErrInvalid},
		{"end in 1969", ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), End: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)}, ledger.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWritesNothing(t, b, tc.want, func() error {
				_, err := b.Deposit(context.Background(), b.Req(), tc.spec)
				return err
			})
		})
	}
	wantAmount(t, "chem amount", b.MustBalance("chem").Amount, "10")
	// An allocation that starts later is fine, as is a past start.
	if _, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: now.Add(-24 * time.Hour), End: now.Add(time.Second)}); err != nil {
		t.Errorf("deposit that started yesterday and ends in a second: %v", err)
	}
}

func testDepositAndTopUp(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1")
	now := b.Clock.Now()
	r, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "100.50"), CreditLimit: Dec(t, "20"),
		End: now.Add(30 * 24 * time.Hour), Description: "grant 1"})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Allocations[0]
	if !a.Start.Equal(now) || a.Description != "grant 1" {
		t.Errorf("new allocation = %+v", a)
	}
	if _, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "50"), Allocation: a.ID}); err != nil {
		t.Fatal(err)
	}
	bal := b.MustBalance("chem")
	wantAmount(t, "amount", bal.Amount, "150.50")
	wantAmount(t, "reserved", bal.Reserved, "0")
	wantAmount(t, "balance", bal.Balance.Balance, "150.50")
	wantAmount(t, "credit limit", bal.CreditLimit, "20")
	wantAmount(t, "available", bal.Available, "170.50")
	wantAmount(t, "deposited", bal.Allocations[0].Deposited, "150.50")
	// A project shows its account's figures.
	wantAmount(t, "project available", b.MustBalance("chem.lab1").Available, "170.50")
}

func testWithdrawDebitOrder(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc1"}); err != nil {
		t.Fatal(err)
	}
	now := b.Clock.Now()
	late := b.MustDeposit("chem", "100", now.Add(60*24*time.Hour))
	never := b.MustDeposit("chem", "100", time.Time{})
	anyMachine := b.MustDeposit("chem", "100", now.Add(30*24*time.Hour))
	r, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "100"), End: now.Add(30 * 24 * time.Hour), Machine: "hpc1"})
	if err != nil {
		t.Fatal(err)
	}
	specific := r.Allocations[0].ID
	// 250 leaves: the machine-specific allocation ending first, then the
	// any-machine one with the same end, then 50 of the next to end.
	r, err = b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "250")})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id     uint64
		amount string
	}{{specific, "-100"}, {anyMachine, "-100"}, {late, "-50"}}
	if len(r.Deltas) != len(want) {
		t.Fatalf("deltas = %+v", r.Deltas)
	}
	for i, w := range want {
		if r.Deltas[i].Allocation != w.id || !r.Deltas[i].Amount.Equal(Dec(t, w.amount)) {
			t.Errorf("delta %d = %+v, want allocation %d %s", i, r.Deltas[i], w.id, w.amount)
		}
	}
	// Naming an allocation takes from it alone.
	if _, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "10"), Allocation: never}); err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "amount", b.MustBalance("chem").Amount, "140")
}

func testWithdrawCreditLimit(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	if _, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "10"), CreditLimit: Dec(t, "5")}); err != nil {
		t.Fatal(err)
	}
	refusedWritesNothing(t, b, ledger.ErrInsufficientFunds, func() error {
		_, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "15.01")})
		return err
	})
	if _, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "15")}); err != nil {
		t.Fatal(err)
	}
	bal := b.MustBalance("chem")
	wantAmount(t, "amount", bal.Amount, "-5")
	wantAmount(t, "available", bal.Available, "0")
}

func testExpired(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	now := b.Clock.Now()
	b.MustDeposit("chem", "100", now.Add(time.Hour))
	b.MustDeposit("chem", "40", time.Time{})
	if _, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "500"), Start: now.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "amount before expiry", b.MustBalance("chem").Amount, "140")
	b.Clock.Advance(2 * time.Hour)
	bal := b.MustBalance("chem")
	wantAmount(t, "amount after expiry", bal.Amount, "40")
	// The balance lists the allocations that have not ended: the active
	// one and the one yet to start.
	if len(bal.Allocations) != 2 || bal.Allocations[0].ID != 2 || !bal.Allocations[0].Active || bal.Allocations[1].ID != 3 || bal.Allocations[1].Active {
		t.Errorf("allocation states = %+v", bal.Allocations)
	}
	refusedWritesNothing(t, b, ledger.ErrInsufficientFunds, func() error {
		_, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "41")})
		return err
	})
	b.Clock.Advance(24 * time.Hour)
	wantAmount(t, "amount once the future allocation starts", b.MustBalance("chem").Amount, "540")
}

// testLiveAllocations: the index by end lists, at each time, the
// account's allocations that have not ended by then (yet to start too),
// in id order, and none of another account; a change sees the allocations
// it stores.
func testLiveAllocations(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "bio")
	now := b.Clock.Now()
	ctx := context.Background()
	ends := []time.Time{now.Add(2 * time.Hour), {}, now.Add(time.Hour), now.Add(time.Hour + time.Microsecond), now.Add(3 * time.Hour)}
	var ids []uint64
	for _, end := range ends {
		ids = append(ids, b.MustDeposit("chem", "1", end))
	}
	b.MustDeposit("bio", "1", now.Add(time.Hour))
	// One yet to start, ending last.
	r, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: now.Add(4 * time.Hour), End: now.Add(5 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, r.Allocations[0].ID)
	live := func(tx ledger.Tx, at time.Time) []uint64 {
		t.Helper()
		return mustAllocationIDs(t)(tx.LiveAllocations("chem", at))
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		want []uint64
	}{
		{"from the start of time", time.Time{}, ids},
		{"now", now, ids},
		{"at the first end", now.Add(time.Hour), []uint64{ids[0], ids[1], ids[3], ids[4], ids[5]}},
		{"a microsecond later", now.Add(time.Hour + time.Microsecond), []uint64{ids[0], ids[1], ids[4], ids[5]}},
		{"once all but one have ended", now.Add(5 * time.Hour), []uint64{ids[1]}},
	} {
		if err := b.Store.View(ctx, func(tx ledger.Tx) error {
			if got := live(tx, tc.at); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Read in a change (where an engine may answer from a cache), then
	// again after one more is stored.
	b.Clock.Advance(90 * time.Minute)
	for range 2 {
		if _, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Allocation: ids[1]}); err != nil {
			t.Fatal(err)
		}
	}
	err = b.Store.Update(ctx, func(tx ledger.Tx) error {
		at := b.Clock.Now()
		want := []uint64{ids[0], ids[1], ids[4], ids[5]}
		if got := live(tx, at); !slices.Equal(got, want) {
			t.Errorf("in a change: %v, want %v", got, want)
		}
		id, err := tx.NextAllocationID()
		if err != nil {
			return err
		}
		a := ledger.Allocation{AllocationTerms: ledger.AllocationTerms{ID: id, Account: "chem", Start: at, End: at.Add(time.Hour), Created: at}}
		if err := tx.PutAllocation(a, 0); err != nil {
			return err
		}
		if got := live(tx, at); !slices.Equal(got, append(want, id)) {
			t.Errorf("after storing allocation %d: %v, want %v", id, got, append(want, id))
		}
		return errRollBack
	})
	if !errors.Is(err, errRollBack) {
		t.Fatal(err)
	}
}

// testActiveAllocations: the allocations active at a time are those
// started by then and not ended, in a read and in a change, before and
// after a change finds the upcoming ones started; the next start is the
// first after the time asked, and the upcoming allocations (all, or the
// first) those that start after it by start; the audit (NewBank's
// cleanup) agrees.
func testActiveAllocations(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "bio")
	now := b.Clock.Now()
	ctx := context.Background()
	deposit := func(account string, start, end time.Time) uint64 {
		t.Helper()
		r, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: account, Amount: Dec(t, "1"), Start: start, End: end})
		if err != nil {
			t.Fatal(err)
		}
		return r.Allocations[0].ID
	}
	started := deposit("chem", time.Time{}, now.Add(time.Hour))
	lasting := deposit("chem", time.Time{}, time.Time{})
	soon := deposit("chem", now.Add(2*time.Hour), now.Add(3*time.Hour))
	later := deposit("chem", now.Add(4*time.Hour), time.Time{})
	brief := deposit("chem", now.Add(2*time.Hour), now.Add(2*time.Hour+time.Minute))
	deposit("bio", now.Add(time.Minute), time.Time{})
	// A top-up of one yet to start keeps it listed once, by its start.
	if _, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Allocation: later}); err != nil {
		t.Fatal(err)
	}
	ask := func(tx ledger.Tx, at time.Time) ([]uint64, time.Time) {
		t.Helper()
		got := mustAllocationIDs(t)(tx.ActiveAllocations("chem", at))
		next, ok, err := tx.NextStart("chem", at)
		if err != nil || ok == next.IsZero() {
			t.Fatalf("next start after %s: %s, %v, %v", at, next, ok, err)
		}
		return got, next
	}
	upcoming := func(tx ledger.Tx, at time.Time, n int) []uint64 {
		t.Helper()
		return mustAllocationIDs(t)(tx.UpcomingAllocations("chem", at, n))
	}
	for _, tc := range []struct {
		name     string
		at       time.Time
		want     []uint64
		next     time.Time
		upcoming []uint64
	}{
		{"now", now, []uint64{started, lasting}, now.Add(2 * time.Hour), []uint64{soon, brief, later}},
		{"at the first end", now.Add(time.Hour), []uint64{lasting}, now.Add(2 * time.Hour), []uint64{soon, brief, later}},
		{"at two starts", now.Add(2 * time.Hour), []uint64{lasting, soon, brief}, now.Add(4 * time.Hour), []uint64{later}},
		{"past one's end", now.Add(2*time.Hour + time.Minute), []uint64{lasting, soon}, now.Add(4 * time.Hour), []uint64{later}},
		{"once all have started", now.Add(5 * time.Hour), []uint64{lasting, later}, time.Time{}, []uint64{}},
	} {
		// Each time asked in a read, then in a change that finds the
		// upcoming ones started (rolled back), and in a read again.
		for _, step := range []func(func(ledger.Tx) error) error{
			func(fn func(ledger.Tx) error) error { return b.Store.View(ctx, fn) },
			func(fn func(ledger.Tx) error) error {
				if err := b.Store.Update(ctx, func(tx ledger.Tx) error { fn(tx); return errRollBack }); !errors.Is(err, errRollBack) {
					return err
				}
				return nil
			},
			func(fn func(ledger.Tx) error) error { return b.Store.View(ctx, fn) },
		} {
			if err := step(func(tx ledger.Tx) error {
				if got, next := ask(tx, tc.at); !slices.Equal(got, tc.want) || !next.Equal(tc.next) {
					t.Errorf("%s: %v, next start %s; want %v, %s", tc.name, got, next, tc.want, tc.next)
				}
				if got := upcoming(tx, tc.at, -1); !slices.Equal(got, tc.upcoming) {
					t.Errorf("%s: upcoming %v, want %v", tc.name, got, tc.upcoming)
				}
				if got, want := upcoming(tx, tc.at, 1), tc.upcoming[:min(len(tc.upcoming), 1)]; !slices.Equal(got, want) {
					t.Errorf("%s: the first upcoming %v, want %v", tc.name, got, want)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A change at each time: what it finds started stays found.
	for _, d := range []time.Duration{2*time.Hour + 30*time.Second, 5 * time.Hour} {
		b.Clock.Advance(now.Add(d).Sub(b.Clock.Now()))
		b.MustDeposit("chem", "1", time.Time{})
	}
	if err := b.Store.View(ctx, func(tx ledger.Tx) error {
		got, next := ask(tx, now.Add(5*time.Hour))
		if want := []uint64{lasting, later, 7, 8}; !slices.Equal(got, want) || !next.IsZero() {
			t.Errorf("after the changes: %v, next start %s; want %v and none", got, next, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// lasting, later (topped up) and the changes' two.
	if got := b.MustBalance("chem").Amount; !got.Equal(Dec(t, "5")) {
		t.Errorf("chem's amount: %s, want 5", got)
	}
}

// errRollBack ends a change that must leave nothing.
var errRollBack = errors.New("roll back")

// testUsedUpAllocations: an allocation with no amount and no credit limit
// left is listed as used up and not as active, and back among the active
// ones once a deposit gives it credits, in a read and in a change (where
// it is stored used up and usable again in the same transaction); every
// one not ended is live; one that has ended is in neither list; the audit
// (NewBank's cleanup) agrees.
func testUsedUpAllocations(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	ctx := context.Background()
	now := b.Clock.Now()
	brief := b.MustDeposit("chem", "1", now.Add(time.Hour))
	lasting := b.MustDeposit("chem", "5", time.Time{})
	r, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: now.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	upcoming := r.Allocations[0].ID
	withdraw := func(amount string, id uint64) {
		t.Helper()
		if _, err := b.Withdraw(ctx, b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, amount), Allocation: id}); err != nil {
			t.Fatal(err)
		}
	}
	ids := mustAllocationIDs(t)
	check := func(what string, tx ledger.Tx, active, usedUp, live []uint64) {
		t.Helper()
		at := b.Clock.Now()
		for _, c := range []struct {
			list      string
			got, want []uint64
		}{
			{"active", ids(tx.ActiveAllocations("chem", at)), active},
			{"used up", ids(tx.UsedUpAllocations("chem", at, -1)), usedUp},
			{"live", ids(tx.LiveAllocations("chem", at)), live},
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s: %s %v, want %v", what, c.list, c.got, c.want)
			}
		}
	}
	both := func(what string, active, usedUp, live []uint64) {
		t.Helper()
		if err := b.Store.View(ctx, func(tx ledger.Tx) error { check(what+", read", tx, active, usedUp, live); return nil }); err != nil {
			t.Fatal(err)
		}
		err := b.Store.Update(ctx, func(tx ledger.Tx) error { check(what+", in a change", tx, active, usedUp, live); return errRollBack })
		if !errors.Is(err, errRollBack) {
			t.Fatal(err)
		}
	}
	all := []uint64{brief, lasting, upcoming}
	both("none used up", []uint64{brief, lasting}, []uint64{}, all)
	withdraw("1", brief)
	both("one used up", []uint64{lasting}, []uint64{brief}, all)
	if _, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "2"), Allocation: brief}); err != nil {
		t.Fatal(err)
	}
	both("topped up again", []uint64{brief, lasting}, []uint64{}, all)
	withdraw("2", brief)
	err = b.Store.Update(ctx, func(tx ledger.Tx) error {
		a, ok, err := tx.Allocation(brief)
		if err != nil || !ok {
			t.Fatalf("allocation %d: %v, %v", brief, ok, err)
		}
		check("used up again", tx, []uint64{lasting}, []uint64{brief}, all)
		a.Amount = Dec(t, "3")
		if err := tx.PutAllocation(a, 0); err != nil {
			return err
		}
		check("stored usable in the change", tx, []uint64{brief, lasting}, []uint64{}, all)
		a.Amount = decimal.Zero
		if err := tx.PutAllocation(a, 0); err != nil {
			return err
		}
		check("stored used up in the same change", tx, []uint64{lasting}, []uint64{brief}, all)
		return errRollBack
	})
	if !errors.Is(err, errRollBack) {
		t.Fatal(err)
	}
	b.Clock.Advance(time.Hour)
	both("once it has ended", []uint64{lasting}, []uint64{}, []uint64{lasting, upcoming})
}

func testTransfer(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "bio")
	now := b.Clock.Now()
	end1, end2 := now.Add(30*24*time.Hour), now.Add(90*24*time.Hour)
	b.MustDeposit("chem", "100", end1)
	b.MustDeposit("chem", "100", end2)
	r, err := b.Transfer(context.Background(), b.Req(), ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "150")})
	if err != nil {
		t.Fatal(err)
	}
	bio := b.MustBalance("bio")
	if len(bio.Allocations) != 2 {
		t.Fatalf("bio allocations = %+v", bio.Allocations)
	}
	// The pieces keep the dates of where they came from.
	wantAmount(t, "bio first", bio.Allocations[0].Amount, "100")
	wantAmount(t, "bio second", bio.Allocations[1].Amount, "50")
	if !bio.Allocations[0].End.Equal(end1) || !bio.Allocations[1].End.Equal(end2) || !bio.Allocations[0].Start.Equal(now) {
		t.Errorf("bio allocation dates = %+v", bio.Allocations)
	}
	wantAmount(t, "chem", b.MustBalance("chem").Amount, "50")
	if len(r.Deltas) != 4 {
		t.Errorf("deltas = %+v", r.Deltas)
	}
	// A second transfer with the same window tops up, not creates.
	if _, err := b.Transfer(context.Background(), b.Req(), ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "20")}); err != nil {
		t.Fatal(err)
	}
	bio = b.MustBalance("bio")
	if len(bio.Allocations) != 2 {
		t.Fatalf("bio allocations after top-up transfer = %+v", bio.Allocations)
	}
	wantAmount(t, "bio second after top-up", bio.Allocations[1].Amount, "70")
}

func testMoveRefusals(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "bio", "old")
	b.MustDeposit("chem", "100", time.Time{})
	b.MustDeposit("old", "100", time.Time{})
	if _, err := b.DeactivateNode(context.Background(), b.Req(), "old"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec ledger.TransferSpec
		want error
	}{
		{"beyond available", ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "100.01")}, ledger.ErrInsufficientFunds},
		{"to itself", ledger.TransferSpec{From: "chem", To: "chem", Amount: Dec(t, "1")}, ledger.ErrInvalid},
		{"to a project", ledger.TransferSpec{From: "chem", To: "chem.lab1", Amount: Dec(t, "1")}, ledger.ErrInvalid},
		{"from inactive", ledger.TransferSpec{From: "old", To: "bio", Amount: Dec(t, "1")}, ledger.ErrInactive},
		{"to unknown", ledger.TransferSpec{From: "chem", To: "nope", Amount: Dec(t, "1")}, ledger.ErrNotFound},
		{"zero", ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "0")}, ledger.ErrInvalid},
		{"unknown allocation", ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "1"), Allocation: 99}, ledger.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWritesNothing(t, b, tc.want, func() error {
				_, err := b.Transfer(context.Background(), b.Req(), tc.spec)
				return err
			})
		})
	}
	refusedWritesNothing(t, b, ledger.ErrInsufficientFunds, func() error {
		_, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "100.01")})
		return err
	})
	wantAmount(t, "chem", b.MustBalance("chem").Amount, "100")
}

func testBalanceAtTime(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	t0 := b.Clock.Now()
	b.MustDeposit("chem", "100", t0.Add(10*24*time.Hour))
	b.Clock.Advance(time.Hour)
	b.MustDeposit("chem", "50", time.Time{})
	b.Clock.Advance(time.Hour)
	if _, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "30")}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(20 * 24 * time.Hour) // the first allocation has expired
	for _, tc := range []struct {
		name   string
		at     time.Time
		amount string
		allocs int
	}{
		{"before anything", t0.Add(-time.Minute), "0", 0},
		{"at the first deposit", t0, "100", 1},
		{"between deposits", t0.Add(30 * time.Minute), "100", 1},
		{"after the second deposit", t0.Add(90 * time.Minute), "150", 2},
		{"after the withdrawal", t0.Add(3 * time.Hour), "120", 2},
		// Those that have ended are not listed.
		{"after the first expired", t0.Add(11 * 24 * time.Hour), "50", 1},
		{"now", time.Time{}, "50", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nb, err := b.BalanceAt(context.Background(), "chem", tc.at)
			if err != nil {
				t.Fatal(err)
			}
			wantAmount(t, "amount", nb.Amount, tc.amount)
			if len(nb.Allocations) != tc.allocs {
				t.Errorf("allocations = %d, want %d", len(nb.Allocations), tc.allocs)
			}
		})
	}
}

// testBalanceUsedUp: a balance now lists, of the active allocations used
// up, the first ledger.UsedUpListed to end, saying it left some out; the
// balance with every allocation lists them all; the figures are the same
// either way.
func testBalanceUsedUp(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	ctx, now := context.Background(), b.Clock.Now()
	live := b.MustDeposit("chem", "100", time.Time{})
	// The one ending last is made first: the balance picks by end.
	var usedUp []uint64
	for i := range ledger.UsedUpListed + 2 {
		id := b.MustDeposit("chem", "1", now.Add(time.Duration(ledger.UsedUpListed+2-i)*24*time.Hour))
		if _, err := b.Withdraw(ctx, b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "1"), Allocation: id}); err != nil {
			t.Fatal(err)
		}
		usedUp = append(usedUp, id)
	}
	ids := func(nb ledger.NodeBalance) []uint64 { return allocationIDs(nb.Allocations) }
	for _, tc := range []struct {
		name    string
		balance func(context.Context, string, time.Time) (ledger.NodeBalance, error)
		want    []uint64
		leftOut bool
	}{
		{"now", b.BalanceAt, append([]uint64{live}, usedUp[2:]...), true},
		{"with every one", b.BalanceWithUpcoming, append([]uint64{live}, usedUp...), false},
	} {
		nb, err := tc.balance(ctx, "chem", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(nb); !slices.Equal(got, tc.want) || nb.UsedUpLeftOut != tc.leftOut {
			t.Errorf("%s: allocations %v, used up left out %v; want %v, %v", tc.name, got, nb.UsedUpLeftOut, tc.want, tc.leftOut)
		}
		wantAmount(t, tc.name+": amount", nb.Amount, "100")
		wantAmount(t, tc.name+": available", nb.Available, "100")
	}
}

// testBalanceUpcoming: a balance lists the active allocations and the
// first ledger.UpcomingListed of those yet to start, by start, saying
// whether it left some out, now and at a past time; the balance with
// every upcoming allocation lists them all.
func testBalanceUpcoming(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "bio")
	ctx, now := context.Background(), b.Clock.Now()
	active := b.MustDeposit("chem", "100", time.Time{})
	// The later one is made first: the balance picks by start, not id.
	var upcoming []uint64
	for i := range ledger.UpcomingListed + 2 {
		start := now.Add(time.Duration(ledger.UpcomingListed+2-i) * 24 * time.Hour)
		r, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1"), Start: start})
		if err != nil {
			t.Fatal(err)
		}
		upcoming = append(upcoming, r.Allocations[0].ID)
		if i < ledger.UpcomingListed {
			if _, err := b.Deposit(ctx, b.Req(), ledger.DepositSpec{Account: "bio", Amount: Dec(t, "1"), Start: start}); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.Clock.Advance(time.Hour)
	ids := func(nb ledger.NodeBalance) []uint64 { return allocationIDs(nb.Allocations) }
	all := append([]uint64{active}, upcoming...)
	listed := append([]uint64{active}, upcoming[2:]...)
	for _, tc := range []struct {
		name    string
		balance func() (ledger.NodeBalance, error)
		want    []uint64
		leftOut bool
	}{
		{"now", func() (ledger.NodeBalance, error) { return b.BalanceAt(ctx, "chem", time.Time{}) }, listed, true},
		{"at a past time", func() (ledger.NodeBalance, error) { return b.BalanceAt(ctx, "chem", now.Add(time.Minute)) }, listed, true},
		{"with every upcoming one", func() (ledger.NodeBalance, error) { return b.BalanceWithUpcoming(ctx, "chem", time.Time{}) }, all, false},
		{"past, with every upcoming one", func() (ledger.NodeBalance, error) { return b.BalanceWithUpcoming(ctx, "chem", now.Add(time.Minute)) }, all, false},
		{"as many as listed", func() (ledger.NodeBalance, error) { return b.BalanceAt(ctx, "bio", time.Time{}) }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nb, err := tc.balance()
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(nb); tc.want != nil && !slices.Equal(got, tc.want) || tc.want == nil && len(got) != ledger.UpcomingListed {
				t.Errorf("allocations %v, want %v", got, tc.want)
			}
			if nb.UpcomingLeftOut != tc.leftOut {
				t.Errorf("upcoming left out: %v, want %v", nb.UpcomingLeftOut, tc.leftOut)
			}
			if nb.Node == "chem" {
				wantAmount(t, "amount", nb.Amount, "100")
			}
		})
	}
	for _, tc := range []struct {
		name     string
		balances func() ([]ledger.NodeBalance, error)
		want     []uint64
	}{
		{"every account's", func() ([]ledger.NodeBalance, error) { return b.Balances(ctx, time.Time{}) }, listed},
		{"every account's with every upcoming one", func() ([]ledger.NodeBalance, error) { return b.BalancesWithUpcoming(ctx, time.Time{}) }, all},
	} {
		nbs, err := tc.balances()
		if err != nil {
			t.Fatal(err)
		}
		if len(nbs) != 2 || nbs[1].Node != "chem" || !slices.Equal(ids(nbs[1]), tc.want) {
			t.Errorf("%s: %+v, want chem's %v", tc.name, nbs, tc.want)
		}
	}
}

func testStatement(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "bio")
	t0 := b.Clock.Now()
	b.MustDeposit("chem", "1000", time.Time{})
	b.MustDeposit("bio", "300", time.Time{})
	b.Clock.Advance(24 * time.Hour)
	from := b.Clock.Now()
	b.MustDeposit("chem", "200", time.Time{})
	if _, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "50")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Transfer(context.Background(), b.Req(), ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "100")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Transfer(context.Background(), b.Req(), ledger.TransferSpec{From: "bio", To: "chem", Amount: Dec(t, "25")}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(time.Hour)
	to := b.Clock.Now()
	b.MustDeposit("chem", "7", time.Time{}) // after the period
	st, err := b.Statement(context.Background(), "chem", from, to, false)
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "beginning", st.Beginning, "1000")
	wantAmount(t, "credits", st.Credits, "225")
	wantAmount(t, "debits", st.Debits, "150")
	wantAmount(t, "ending", st.Ending, "1075")
	if !st.Beginning.Add(st.Credits).Sub(st.Debits).Equal(st.Ending) {
		t.Errorf("statement does not add up: %+v", st)
	}
	if len(st.CreditLines) != 2 || len(st.DebitLines) != 2 || st.DebitLines[1].Ref != "bio" || st.CreditLines[1].Ref != "bio" {
		t.Errorf("lines: credits %+v debits %+v", st.CreditLines, st.DebitLines)
	}
	sum, err := b.Statement(context.Background(), "chem", t0, to.Add(time.Hour), true)
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "whole-period ending", sum.Ending, "1082")
	if len(sum.CreditLines) != 2 || sum.CreditLines[0].Kind != ledger.KindDeposit || sum.CreditLines[0].Count != 3 {
		t.Errorf("summarized credits = %+v", sum.CreditLines)
	}
	_, err = b.Statement(context.Background(), "chem", to, from, false)
	wantErr(t, err, ledger.ErrInvalid)
}

func testJournalFilter(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "bio")
	b.MustDeposit("chem", "10", time.Time{})
	b.Clock.Advance(time.Hour)
	mid := b.Clock.Now()
	b.MustDeposit("bio", "10", time.Time{})
	if _, err := b.Transfer(context.Background(), b.Req(), ledger.TransferSpec{From: "bio", To: "chem", Amount: Dec(t, "1")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		f     ledger.JournalFilter
		kinds []ledger.Kind
	}{
		{"node and subtree", ledger.JournalFilter{Node: "chem"}, []ledger.Kind{ledger.KindNodeCreate, ledger.KindNodeCreate, ledger.KindDeposit, ledger.KindTransfer}},
		{"kind", ledger.JournalFilter{Kinds: []ledger.Kind{ledger.KindDeposit}}, []ledger.Kind{ledger.KindDeposit, ledger.KindDeposit}},
		{"from", ledger.JournalFilter{From: mid}, []ledger.Kind{ledger.KindDeposit, ledger.KindTransfer}},
		{"to", ledger.JournalFilter{To: mid, Node: "bio"}, []ledger.Kind{ledger.KindNodeCreate}},
		{"limit", ledger.JournalFilter{Limit: 1}, []ledger.Kind{ledger.KindTransfer}},
		{"node and limit: the newest, in order", ledger.JournalFilter{Node: "chem", Limit: 2}, []ledger.Kind{ledger.KindDeposit, ledger.KindTransfer}},
		{"project and limit", ledger.JournalFilter{Node: "chem.lab1", Limit: 5}, []ledger.Kind{ledger.KindNodeCreate}},
		{"node, kind and limit", ledger.JournalFilter{Node: "bio", Kinds: []ledger.Kind{ledger.KindNodeCreate, ledger.KindDeposit}, Limit: 5}, []ledger.Kind{ledger.KindNodeCreate, ledger.KindDeposit}},
		{"node, range and limit", ledger.JournalFilter{Node: "chem", To: mid, Limit: 1}, []ledger.Kind{ledger.KindDeposit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, err := b.Journal(context.Background(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []ledger.Kind
			for _, e := range es {
				got = append(got, e.Kind)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.kinds) {
				t.Errorf("kinds = %v, want %v", got, tc.kinds)
			}
		})
	}
}

func testIdempotency(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	req := ledger.Request{Actor: "sched", ID: "dep-1"}
	spec := ledger.DepositSpec{Account: "chem", Amount: Dec(t, "10")}
	first, err := b.Deposit(context.Background(), req, spec)
	if err != nil {
		t.Fatal(err)
	}
	before := b.JournalLen()
	for i := 0; i < 20; i++ {
		again, err := b.Deposit(context.Background(), req, spec)
		if err != nil {
			t.Fatal(err)
		}
		if again.Seq != first.Seq || again.Allocations[0].ID != first.Allocations[0].ID {
			t.Fatalf("retry answer %+v differs from first %+v", again, first)
		}
	}
	if b.JournalLen() != before {
		t.Fatal("a retry wrote to the journal")
	}
	wantAmount(t, "amount", b.MustBalance("chem").Amount, "10")
	refusedWritesNothing(t, b, ledger.ErrRequestConflict, func() error {
		_, err := b.Deposit(context.Background(), req, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "11")})
		return err
	})
	// The same id from another client is another request.
	if _, err := b.Deposit(context.Background(), ledger.Request{Actor: "other", ID: "dep-1"}, spec); err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "amount", b.MustBalance("chem").Amount, "20")
}

func testConcurrentDeposits(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	const workers, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1.25")})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantAmount(t, "amount", b.MustBalance("chem").Amount, decimal.NewFromFloat(1.25).Mul(decimal.NewFromInt(workers*each)).String())
}

func testConcurrentWithdrawals(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	b.MustDeposit("chem", "100", time.Time{})
	const tries = 200 // each takes 1; exactly 100 fit
	ok, refused := Race(t, tries, func(int) error {
		_, err := b.Withdraw(context.Background(), b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: Dec(t, "1")})
		return err
	})
	if ok != 100 || refused != tries-100 {
		t.Errorf("%d withdrawals succeeded and %d were refused, want 100 and %d", ok, refused, tries-100)
	}
	wantAmount(t, "amount", b.MustBalance("chem").Amount, "0")
}

func testAuditFindsTampering(t *testing.T, open OpenStore) {
	store := open(t)
	clock := &Clock{now: Epoch}
	if err := ledger.Init(context.Background(), store, ledger.Settings{Precision: 2}, ledger.Request{Actor: "test"}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store, ledger.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := l.CreateNode(context.Background(), ledger.Request{Actor: "t"}, ledger.NodeSpec{Name: "chem"}); err != nil {
		t.Fatal(err)
	}
	r, err := l.Deposit(context.Background(), ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "10")})
	if err != nil {
		t.Fatal(err)
	}
	// A clean audit: the incremental audits below start where it ended.
	if rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("audit of a sound bank: %+v %v", rep, err)
	}
	// Every tampering below is found by a full audit and by one that
	// starts where the clean one ended.
	audits := func(wants ...string) {
		t.Helper()
		for _, full := range []bool{false, true} {
			rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: full})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Full != full {
				t.Errorf("audit asked full %v ran full %v", full, rep.Full)
			}
			for _, want := range wants {
				wantProblem(t, rep, want)
			}
		}
	}
	tamper := func(fn func(ledger.Tx) error) {
		t.Helper()
		if err := store.Update(context.Background(), fn); err != nil {
			t.Fatal(err)
		}
	}
	// An amount changed behind the journal's back.
	a := r.Allocations[0]
	a.Amount = Dec(t, "1000")
	tamper(func(tx ledger.Tx) error { return tx.PutAllocation(a, r.Seq) })
	audits("allocation 1 of chem: amount is 1000, the journal says 10")
	// A node changed behind the journal's back.
	tamper(func(tx ledger.Tx) error { return tx.PutNode(ledger.Node{Name: "chem", Active: false}) })
	// A forged entry appended without the chain, and one whose stored
	// bytes are not those its hash is of.
	tamper(func(tx ledger.Tx) error {
		head, err := tx.Head()
		if err != nil {
			return err
		}
		forged, err := ledger.SealEntry(ledger.Entry{Seq: head.Seq + 1, Time: head.Time, Kind: ledger.KindDeposit, PrevHash: "forged"})
		if err != nil {
			return err
		}
		if err := tx.AppendEntry(forged); err != nil {
			return err
		}
		altered, err := ledger.SealEntry(ledger.Entry{Seq: head.Seq + 2, Time: head.Time, Kind: ledger.KindDeposit, PrevHash: hex.EncodeToString(forged.Hash[:])})
		if err != nil {
			return err
		}
		altered.Body = bytes.Replace(altered.Body, []byte("deposit"), []byte("withdraw"), 1)
		return tx.AppendEntry(altered)
	})
	// The running sums the ledger keeps, changed.
	tamper(func(tx ledger.Tx) error {
		return tx.PutRecord(ledger.Record{Kind: "ledger.account", Key: "chem", Value: []byte(`{"version":"x","charged":{"chem":{"1":"5"}}}`)})
	})
	audits("node chem: stored state differs from the journal's", "journal: entry 4: previous hash forged",
		"journal: entry 5: stored hash", "account chem: the charged sum of chem on allocation 1 is 5")
}

// testKeptAnswers: the answer kept for a request's retries is checked
// against the hash its journal entry carries, by the audit and by the
// retry itself, so an altered receipt is never given.
func testKeptAnswers(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	req := b.Req()
	first, err := b.Deposit(context.Background(), req, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "10")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Deposit(context.Background(), req, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "10")})
	if err != nil || again.Seq != first.Seq {
		t.Fatalf("retry: %+v %v, want entry %d", again, err, first.Seq)
	}
	key := ledger.RequestKey{Client: req.Actor, ID: req.ID}
	var rec ledger.RequestRecord
	err = b.Store.Update(context.Background(), func(tx ledger.Tx) error {
		r, ok, err := tx.Request(key)
		if err != nil || !ok {
			return fmt.Errorf("request record: %v %v", ok, err)
		}
		rec = r
		r.Result = bytes.Replace(r.Result, []byte(`"10"`), []byte(`"90"`), 1)
		if bytes.Equal(r.Result, rec.Result) {
			return fmt.Errorf("no amount of 10 in the kept answer %s", rec.Result)
		}
		return tx.PutRequest(key, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := b.Audit(context.Background(), ledger.AuditOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	wantProblem(t, rep, fmt.Sprintf("requests: ledger: corrupt data: the answer kept for request %q of test is not the one journal entry %d recorded", req.ID, first.Seq))
	if _, err := b.Deposit(context.Background(), req, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "10")}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("retry with an altered kept answer: %v, want ErrCorrupt", err)
	}
	// Put back, so that the cleanup's audit passes.
	if err := b.Store.Update(context.Background(), func(tx ledger.Tx) error { return tx.PutRequest(key, rec) }); err != nil {
		t.Fatal(err)
	}
}

// wantProblem fails unless one of the audit's problems starts with prefix.
func wantProblem(t *testing.T, rep ledger.AuditReport, prefix string) {
	t.Helper()
	for _, p := range rep.Problems {
		if strings.HasPrefix(p, prefix) {
			return
		}
	}
	t.Errorf("audit problems %q lack %q", rep.Problems, prefix)
}

func testPrecision(t *testing.T, open OpenStore) {
	b := NewBankWithPrecision(t, open, 0)
	b.MustNode("chem")
	refusedWritesNothing(t, b, ledger.ErrInvalid, func() error {
		_, err := b.Deposit(context.Background(), b.Req(), ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1.5")})
		return err
	})
	b.MustDeposit("chem", "15", time.Time{})
	wantAmount(t, "amount", b.MustBalance("chem").Amount, "15")
}

// testLienAndChargeIndexes: the indexes an engine keeps for liens and
// charges answer as the contract says, as liens change state.
func testLienAndChargeIndexes(t *testing.T, open OpenStore) {
	store := open(t)
	defer store.Close()
	ctx := context.Background()
	at := func(minutes int) time.Time { return Epoch.Add(time.Duration(minutes) * time.Minute) }
	lien := func(id uint64, account, job string, expires int) ledger.Lien {
		return ledger.Lien{ID: id, JobRef: ledger.JobRef{JobID: job, Machine: "hpc1", Project: account, Account: account, User: "amy"},
			Amount: decimal.NewFromInt(1), Holds: []ledger.Hold{{Allocation: 1, Amount: decimal.NewFromInt(1)}},
			Created: Epoch, Expires: at(expires), State: ledger.LienActive}
	}
	ids := func(liens []ledger.Lien) []uint64 {
		out := []uint64{}
		for _, l := range liens {
			out = append(out, l.ID)
		}
		return out
	}
	update := func(fn func(ledger.Tx) error) {
		t.Helper()
		if err := store.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx ledger.Tx) error {
		for _, l := range []ledger.Lien{lien(1, "chem", "j1", 30), lien(2, "chem", "j2", 10), lien(3, "bio", "j3", 5), lien(4, "chem", "j4", 20), lien(5, "chemx", "j5", 1)} {
			if err := tx.PutLien(l, 0); err != nil {
				return err
			}
		}
		for _, c := range []ledger.Charge{{ID: 1, JobRef: ledger.JobRef{JobID: "j1", Machine: "hpc1"}}, {ID: 2, JobRef: ledger.JobRef{JobID: "j1", Machine: "hpc1"}},
			{ID: 3, JobRef: ledger.JobRef{JobID: "j10", Machine: "hpc1"}}, {ID: 4, JobRef: ledger.JobRef{JobID: "j", Machine: "hpc1"}}} {
			if err := tx.PutCharge(c, 0); err != nil {
				return err
			}
		}
		return nil
	})
	check := func(what string, got []ledger.Lien, err error, want ...uint64) {
		t.Helper()
		if err != nil || !slices.Equal(ids(got), want) {
			t.Errorf("%s: %v %v, want %v", what, ids(got), err, want)
		}
	}
	err := store.View(ctx, func(tx ledger.Tx) error {
		got, err := tx.ActiveLiens("chem")
		check("active liens of chem", got, err, 1, 2, 4)
		got, err = tx.ActiveLiensExpiring("chem", time.Time{}, at(20), 0)
		check("chem's liens expiring by 20 min", got, err, 2, 4)
		got, err = tx.ActiveLiensExpiring("chem", at(10), at(60), 1)
		check("chem's first lien expiring after 10 min", got, err, 4)
		got, err = tx.ExpiredLiens(at(10), 10)
		check("liens expired at 10 min", got, err, 3, 2, 5)
		got, err = tx.ExpiredLiens(at(60), 2)
		if err != nil || len(got) != 2 {
			t.Errorf("at most 2 expired liens: %v %v", ids(got), err)
		}
		l, ok, err := tx.JobLien("hpc1", "j4")
		if err != nil || !ok || l.ID != 4 {
			t.Errorf("lien of job j4: %d %v %v", l.ID, ok, err)
		}
		charges, err := tx.JobCharges("hpc1", "j1")
		if err != nil || len(charges) != 2 || charges[0].ID != 1 || charges[1].ID != 2 {
			t.Errorf("charges of job j1: %+v %v", charges, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Settled, a lien leaves the active index; extended, it moves in it.
	update(func(tx ledger.Tx) error {
		l := lien(2, "chem", "j2", 10)
		l.State = ledger.LienSettled
		if err := tx.PutLien(l, 0); err != nil {
			return err
		}
		return tx.PutLien(lien(4, "chem", "j4", 90), 0)
	})
	err = store.View(ctx, func(tx ledger.Tx) error {
		got, err := tx.ActiveLiensExpiring("chem", time.Time{}, at(60), 0)
		check("chem's liens expiring by 60 min after the changes", got, err, 1)
		got, err = tx.ActiveLiens("chem")
		check("active liens of chem after the changes", got, err, 1, 4)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testFailedCallLeavesNoWrites: calls that run together (group commit)
// do not see each other's failures: one that fails after writing leaves
// nothing, the others all persist.
func testFailedCallLeavesNoWrites(t *testing.T, open OpenStore) {
	store := open(t)
	defer store.Close()
	ctx := context.Background()
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = store.Update(ctx, func(tx ledger.Tx) error {
				if err := tx.PutRecord(ledger.Record{Kind: "test", Key: fmt.Sprintf("k%02d", i), Value: []byte(`1`)}); err != nil {
					return err
				}
				if i%3 == 0 {
					return errBoom
				}
				return nil
			})
		}()
	}
	wg.Wait()
	err := store.View(ctx, func(tx ledger.Tx) error {
		rs, err := tx.Records("test")
		if err != nil {
			return err
		}
		var keys []string
		for _, r := range rs {
			keys = append(keys, r.Key)
		}
		var want []string
		for i, err := range errs {
			if i%3 == 0 != errors.Is(err, errBoom) || (i%3 != 0 && err != nil) {
				t.Errorf("call %d: %v", i, err)
			}
			if i%3 != 0 {
				want = append(want, fmt.Sprintf("k%02d", i))
			}
		}
		if !slices.Equal(keys, want) {
			t.Errorf("records %v, want %v", keys, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testPrunedRequests: answers kept for retries go once older than the
// retention, the newer stay, and the audit is clean after.
func testPrunedRequests(t *testing.T, open OpenStore) {
	b := NewBank(t, open)
	b.MustNode("chem")
	ctx := context.Background()
	old, recent := b.Req(), b.Req()
	if _, err := b.Deposit(ctx, old, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1")}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(8 * 24 * time.Hour)
	if _, err := b.Deposit(ctx, recent, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1")}); err != nil {
		t.Fatal(err)
	}
	kept := func(r ledger.Request) bool {
		var ok bool
		if err := b.Store.View(ctx, func(tx ledger.Tx) (err error) {
			_, ok, err = tx.Request(ledger.RequestKey{Client: r.Actor, ID: r.ID})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	n, err := b.PruneRequests(ctx, b.Clock.Now().Add(-ledger.RequestRetention), 1000)
	if err != nil || kept(old) || !kept(recent) {
		t.Errorf("pruned %d (%v): the old request kept %v, the recent one %v", n, err, kept(old), kept(recent))
	}
	if n, err := b.PruneRequests(ctx, b.Clock.Now().Add(-ledger.RequestRetention), 1000); n != 0 || err != nil {
		t.Errorf("a second prune dropped %d (%v)", n, err)
	}
}

// testIDsGoOn: ids reserved after records were stored under ids of their
// own (a copied bank's) come after those.
func testIDsGoOn(t *testing.T, open OpenStore) {
	store := open(t)
	defer store.Close()
	err := store.Update(context.Background(), func(tx ledger.Tx) error {
		a := ledger.Allocation{AllocationTerms: ledger.AllocationTerms{ID: 3, Account: "chem"}}
		if err := tx.PutAllocation(a, 1); err != nil {
			return err
		}
		if err := tx.PutLien(ledger.Lien{ID: 7, JobRef: ledger.JobRef{JobID: "j", Machine: "m", Account: "chem"}, Expires: Epoch}, 0); err != nil {
			return err
		}
		if err := tx.PutCharge(ledger.Charge{ID: 5, JobRef: ledger.JobRef{JobID: "j", Machine: "m"}}, 0); err != nil {
			return err
		}
		for _, next := range []struct {
			what string
			fn   func() (uint64, error)
			want uint64
		}{{"allocation", tx.NextAllocationID, 4}, {"lien", tx.NextLienID, 8}, {"charge", tx.NextChargeID, 6}} {
			if id, err := next.fn(); err != nil || id != next.want {
				t.Errorf("next %s id: %d %v, want %d", next.what, id, err, next.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testCarriedRecords: a finished lien and a charge put with the journal
// entry that carries them (which an engine may keep as a reference to the
// entry) read back as put, in the change that put them and after, through
// every getter; so does a charge rewritten by a later entry; the counts
// and the node index's numbers are those put.
func testCarriedRecords(t *testing.T, open OpenStore) {
	ctx := context.Background()
	store := open(t)
	defer store.Close()
	job := ledger.JobRef{JobID: "j1", Machine: "hpc1", Project: "chem.lab1", Account: "chem", User: "amy"}
	settled := ledger.Lien{ID: 1, JobRef: job, Amount: decimal.RequireFromString("120.00"), Charged: decimal.RequireFromString("60.00"),
		Holds: []ledger.Hold{{Allocation: 1, Amount: decimal.RequireFromString("120.00")}}, Created: Epoch, Expires: Epoch.Add(time.Hour),
		State: ledger.LienSettled, Detail: []byte(`{"policy":"p"}`)}
	charged := ledger.Charge{ID: 1, JobRef: job, Lien: 1, Amount: decimal.RequireFromString("60.00"),
		Debits: []ledger.Hold{{Allocation: 1, Amount: decimal.RequireFromString("60.00")}}, Final: true, Time: Epoch, Detail: []byte(`{"items":[1]}`)}
	refunded := charged
	refunded.Refunded, refunded.Refunds = decimal.RequireFromString("10.00"), []ledger.Hold{{Allocation: 1, Amount: decimal.RequireFromString("10.00")}}
	same := func(what string, got, want any, ok bool, err error) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if err != nil || !ok || string(g) != string(w) {
			t.Errorf("%s: %s %v %v, want %s", what, g, ok, err, w)
		}
	}
	// appendCarrying journals entry seq carrying l and c, puts them with
	// it as their carrier, and reads them back before and after the entry
	// is appended (the ledger appends its entries as a change ends).
	appendCarrying := func(seq uint64, kind ledger.Kind, l *ledger.Lien, c ledger.Charge) {
		t.Helper()
		err := store.Update(ctx, func(tx ledger.Tx) error {
			head, err := tx.Head()
			if err != nil {
				return err
			}
			e := ledger.Entry{Seq: seq, Time: Epoch, Actor: "test", Kind: kind, Node: job.Project, Lien: l, Charge: &c}
			if seq > 1 {
				e.PrevHash = fmt.Sprintf("%x", head.Hash)
			}
			if l != nil {
				if err := tx.PutLien(*l, seq); err != nil {
					return err
				}
			}
			if err := tx.PutCharge(c, seq); err != nil {
				return err
			}
			got, ok, err := tx.Charge(c.ID)
			same("the charge in the change that put it", got, c, ok, err)
			se, err := ledger.SealEntry(e)
			if err != nil {
				return err
			}
			if err := tx.AppendEntry(se); err != nil {
				return err
			}
			if l != nil {
				got, ok, err := tx.Lien(l.ID)
				same("the lien in the change that put it", got, *l, ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	appendCarrying(1, ledger.KindCharge, &settled, charged)
	appendCarrying(2, ledger.KindRefund, nil, refunded)
	err := store.View(ctx, func(tx ledger.Tx) error {
		l, ok, err := tx.Lien(1)
		same("the lien", l, settled, ok, err)
		l, ok, err = tx.JobLien(job.Machine, job.JobID)
		same("the job's lien", l, settled, ok, err)
		c, ok, err := tx.Charge(1)
		same("the charge refunded", c, refunded, ok, err)
		cs, err := tx.JobCharges(job.Machine, job.JobID)
		same("the job's charges", cs, []ledger.Charge{refunded}, true, err)
		var liens, charges []any
		if err := tx.Liens(func(l ledger.Lien) (bool, error) { liens = append(liens, l); return true, nil }); err != nil {
			return err
		}
		if err := tx.Charges(func(c ledger.Charge) (bool, error) { charges = append(charges, c); return true, nil }); err != nil {
			return err
		}
		same("every lien", liens, []any{settled}, true, nil)
		same("every charge", charges, []any{refunded}, true, nil)
		nl, errL := tx.LienCount()
		nc, errC := tx.ChargeCount()
		if nl != 1 || nc != 1 || errL != nil || errC != nil {
			t.Errorf("counts: %d liens (%v), %d charges (%v), want 1 and 1", nl, errL, nc, errC)
		}
		for _, node := range []string{"chem", "chem.lab1"} {
			var seqs []uint64
			err := tx.NodeSeqs(node, 2, 9, func(seq uint64) (bool, error) { seqs = append(seqs, seq); return true, nil })
			if err != nil || !slices.Equal(seqs, []uint64{2}) {
				t.Errorf("the node index's entries 2 to 9 of %s: %v %v, want [2]", node, seqs, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testCopy: a bank copied into an empty store is the same bank: its full
// audit passes; its journal (the same bytes, so the same hashes), balances
// now and earlier, and kept answers are the source's; new changes go on
// from its ids. A store that holds a bank is not copied into.
func testCopy(t *testing.T, open OpenStore) {
	ctx := context.Background()
	b := NewBank(t, open)
	b.MustNode("chem", "chem.lab1", "bio")
	if _, err := b.AddUser(ctx, b.Req(), ledger.UserSpec{Name: "amy", Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddMachine(ctx, b.Req(), ledger.MachineSpec{Name: "hpc1"}); err != nil {
		t.Fatal(err)
	}
	b.MustDeposit("chem", "100", time.Time{})
	before := b.Clock.Now()
	b.Clock.Advance(time.Hour)
	b.MustDeposit("bio", "50", time.Time{})
	kept := b.Req()
	first, err := b.Transfer(ctx, kept, ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "30")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Withdraw(ctx, b.Req(), ledger.WithdrawSpec{Account: "bio", Amount: Dec(t, "5")}); err != nil {
		t.Fatal(err)
	}

	dst := open(t)
	defer dst.Close()
	rep, err := ledger.Copy(ctx, b.Store, dst, ledger.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != b.JournalLen() || rep.Allocations != 3 || rep.Requests == 0 {
		t.Errorf("copied %+v", rep)
	}
	l, err := ledger.Open(ctx, dst, ledger.WithClock(b.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	audit, err := l.Audit(ctx, ledger.AuditOptions{Full: true})
	if err != nil || len(audit.Problems) > 0 {
		t.Fatalf("audit of the copy: %q %v", audit.Problems, err)
	}
	for _, q := range []func(*ledger.Ledger) (any, error){
		func(l *ledger.Ledger) (any, error) { return l.Journal(ctx, ledger.JournalFilter{}) },
		func(l *ledger.Ledger) (any, error) { return l.BalanceAt(ctx, "chem", time.Time{}) },
		func(l *ledger.Ledger) (any, error) { return l.BalanceAt(ctx, "bio", before) },
		func(l *ledger.Ledger) (any, error) { return l.Nodes(ctx, "chem") },
	} {
		want, err := q(b.Ledger)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q(l)
		wantJSON, _ := json.Marshal(want)
		gotJSON, _ := json.Marshal(got)
		if err != nil || !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("the copy answers %s (%v), the bank %s", gotJSON, err, wantJSON)
		}
	}
	again, err := l.Transfer(ctx, kept, ledger.TransferSpec{From: "chem", To: "bio", Amount: Dec(t, "30")})
	if err != nil || again.Seq != first.Seq {
		t.Errorf("a retry on the copy: %+v %v, want the first answer (entry %d)", again, err, first.Seq)
	}
	r, err := l.Deposit(ctx, ledger.Request{Actor: "test", ID: "after the copy"}, ledger.DepositSpec{Account: "chem", Amount: Dec(t, "1")})
	if err != nil || r.Allocations[0].ID != 4 {
		t.Errorf("a deposit on the copy: %+v %v, want allocation 4", r, err)
	}
	if _, err := ledger.Copy(ctx, b.Store, dst, ledger.CopyOptions{}); !errors.Is(err, ledger.ErrExists) {
		t.Errorf("a copy onto a bank: %v, want ErrExists", err)
	}
}

// mustAllocationIDs gives the ids of the allocations a read of the store
// answers, failing t on its error.
func mustAllocationIDs(t testing.TB) func([]ledger.Allocation, error) []uint64 {
	return func(as []ledger.Allocation, err error) []uint64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return allocationIDs(as)
	}
}

// allocationIDs are the ids of as (allocations, or a balance's
// allocations with their status), in their order; empty, not nil, for none.
func allocationIDs[A ledger.Allocation | ledger.AllocationStatus](as []A) []uint64 {
	out := []uint64{}
	for _, a := range as {
		switch a := any(a).(type) {
		case ledger.Allocation:
			out = append(out, a.ID)
		case ledger.AllocationStatus:
			out = append(out, a.ID)
		}
	}
	return out
}
