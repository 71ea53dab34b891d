package main

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// hfsOutput is what `ingot hfs compute` prints, and what a reference case
// expects.
type hfsOutput struct {
	Quota     map[string]string `json:"quota"`
	Allocated map[string]string `json:"allocated"`
	Leftover  *string           `json:"leftover"`
}

// referenceCase is the part of a testdata/hfs case the test reads itself;
// the whole case goes to the CLI as it is.
type referenceCase struct {
	ID       string    `json:"id"`
	Unit     *string   `json:"unit"`
	Expected hfsOutput `json:"expected"`
}

// TestHFSComputeReferenceCases runs every reference case through `ingot
// hfs compute FILE`, descriptive keys and all, and compares with the
// expected numbers: exactly where the case has a unit, within 1e-6
// otherwise (the files' own rule).
func TestHFSComputeReferenceCases(t *testing.T) {
	b := newCLIBank(t)
	for _, file := range []string{"hgq-cases.json", "extension-cases.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hfs", file))
		if err != nil {
			t.Fatal(err)
		}
		var cases struct{ Cases []json.RawMessage }
		if err := json.Unmarshal(data, &cases); err != nil || len(cases.Cases) == 0 {
			t.Fatalf("%s: %d cases, %v", file, len(cases.Cases), err)
		}
		for _, raw := range cases.Cases {
			var c referenceCase
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			t.Run(c.ID, func(t *testing.T) {
				got := computeFile(t, b, raw)
				tol := big.NewRat(1, 1_000_000)
				if c.Unit != nil {
					tol = new(big.Rat)
				}
				wantNumbers(t, "quota", c.Expected.Quota, got.Quota, tol)
				wantNumbers(t, "allocated", c.Expected.Allocated, got.Allocated, tol)
				if c.Expected.Leftover != nil {
					wantNumbers(t, "leftover", map[string]string{"": *c.Expected.Leftover}, map[string]string{"": *got.Leftover}, tol)
				}
			})
		}
	}
}

// computeFile writes doc to a file and runs `ingot hfs compute` on it.
func computeFile(t *testing.T, b *cliBank, doc []byte) hfsOutput {
	t.Helper()
	file := filepath.Join(t.TempDir(), "hfs.json")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	var out hfsOutput
	if err := json.Unmarshal([]byte(b.ok("hfs", "compute", file)), &out); err != nil || out.Leftover == nil {
		t.Fatalf("hfs compute output: %v", err)
	}
	return out
}

// wantNumbers compares every expected number with the one printed, within
// tol.
func wantNumbers(t *testing.T, what string, want, got map[string]string, tol *big.Rat) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s[%q]: missing, want %s", what, name, w)
			continue
		}
		gr, ok1 := new(big.Rat).SetString(g)
		wr, ok2 := new(big.Rat).SetString(w)
		if !ok1 || !ok2 {
			t.Fatalf("%s[%q]: not numbers: %q, %q", what, name, g, w)
		}
		if diff := gr.Sub(gr, wr); diff.Abs(diff).Cmp(tol) > 0 {
			t.Errorf("%s[%q] = %s, want %s", what, name, g, w)
		}
	}
}

// TestHFSComputeStdinAndFlags: "-" reads standard input, and the output is
// JSON whatever --json or --parsable say.
func TestHFSComputeStdinAndFlags(t *testing.T) {
	b := newCLIBank(t)
	example := filepath.Join("..", "..", "testdata", "hfs", "compute-example.json")
	golden, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hfs", "compute-example.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--json"}, {"--parsable"}} {
		if out := b.ok(append([]string{"hfs", "compute", example}, extra...)...); out != string(golden) {
			t.Errorf("hfs compute %v:\n%s\nwant\n%s", extra, out, golden)
		}
	}
	in, err := os.Open(example)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer func(saved *os.File) { os.Stdin = saved }(os.Stdin)
	os.Stdin = in // the app reads os.Stdin when it runs
	if out := b.ok("hfs", "compute", "-"); out != string(golden) {
		t.Errorf("hfs compute -:\n%s", out)
	}
}

// place is a lien of credits on project: one processor for credits
// seconds at the default rate of 1 credit per processor-second.
func place(job, project string, credits int) []string {
	return []string{"lien", "place", job, "--user", "amy", "--project", project, "--procs", "1", "--wallclock", strconv.Itoa(credits), "--start", futureMonday}
}

// chargeUsed is the final charge of a job that used credits
// processor-seconds.
func chargeUsed(job string, credits int) []string {
	return []string{"charge", job, "--procs", "1", "--wallclock-used", strconv.Itoa(credits), "--start", pastMonday}
}

// newHFSSite is a bank with account phys (10000 credits; phys.lab1 and
// phys.lab2, half each, only lab2 accepting surplus), account chem (1000
// credits; chem.a static 600, chem.b dynamic 1), user amy member of both,
// and one machine. Every policy is set with `project policy`.
func newHFSSite(t *testing.T) *cliBank {
	b := newCLIBank(t)
	b.ok("machine", "add", "hpc1", "--cores", "32")
	for _, node := range []string{"phys", "chem"} {
		b.ok("account", "create", node)
	}
	for _, node := range []string{"phys.lab1", "phys.lab2", "chem.a", "chem.b"} {
		b.ok("project", "create", node)
	}
	b.ok("user", "add", "amy", "--member", "phys", "--member", "chem")
	b.ok("deposit", "phys", "10000")
	b.ok("deposit", "chem", "1000")
	if out := b.ok("hfs", "show", "phys"); !strings.Contains(out, "no HFS policy in phys's tree: its projects share the account's pool") {
		t.Errorf("hfs show before any policy:\n%s", out)
	}
	b.ok("project", "policy", "phys.lab1", "--quota", "dynamic:0.5")
	b.ok("project", "policy", "phys.lab2", "--quota", "dynamic:0.5", "--accept-surplus")
	b.ok("project", "policy", "chem.a", "--quota", "static:600")
	b.ok("project", "policy", "chem.b", "--quota", "dynamic:1")
	return b
}

// sharesOf is an account's split, from `hfs show ACCOUNT --json`, by node.
func sharesOf(b *cliBank, account string) (ledger.AccountShares, map[string]ledger.NodeShare) {
	b.t.Helper()
	var s ledger.AccountShares
	b.json(&s, "hfs", "show", account)
	byName := map[string]ledger.NodeShare{}
	for _, n := range s.Nodes {
		byName[n.Name] = n
	}
	return s, byName
}

// wantShare checks a node's quota, allocation, used, reserved and
// available.
func wantShare(t *testing.T, n ledger.NodeShare, quota, allocated, used, reserved, available string) {
	t.Helper()
	got := []decimal.Decimal{n.Quota, n.Allocated, n.Used, n.Reserved, n.Available}
	for i, w := range []string{quota, allocated, used, reserved, available} {
		if !got[i].Equal(dec(t, w)) {
			t.Errorf("%s: quota %s allocated %s used %s reserved %s available %s; want %s %s %s %s %s", n.Name,
				n.Quota, n.Allocated, n.Used, n.Reserved, n.Available, quota, allocated, used, reserved, available)
			return
		}
	}
}

// TestHFSWalkthrough is the "done when": HFS policies set with the
// CLI, liens and charges placed with it, a project refused at its quota,
// another borrowing surplus, and `balance --json`, `hfs show` and `hfs
// compute` on the same numbers agreeing.
func TestHFSWalkthrough(t *testing.T) {
	b := newHFSSite(t)

	// phys: pool 10000; lab1 and lab2 each get 0.5 × 10000 = 5000, phys
	// keeps 10000 − 5000 − 5000 = 0 as its own quota.
	// lab1 runs a job held at 2000 that used 1500: lab1 used 1500.
	b.ok(place("P1", "phys.lab1", 2000)...)
	b.ok(chargeUsed("P1", 1500)...)
	// A lien of 3500 brings lab1 to 1500 + 3500 = 5000, its quota.
	b.ok(place("P2", "phys.lab1", 3500)...)
	// One credit more is refused: lab1 does not accept surplus, so lab2's
	// idle 5000 is not for it, though the account has 8500 − 3500 = 5000.
	b.refused(t, exitRefused, "project phys.lab1 needs 1, 0 available (its HFS share; phys has 5000 on hpc1)", place("P3", "phys.lab1", 1)...)
	// The job behind P2 never ran: lab1 is back to 1500 and leaves
	// 5000 − 1500 = 3500 of its quota unused.
	b.ok("lien", "release", "P2")
	// lab2 accepts surplus: its 5000 and lab1's 3500, 8500 in all.
	b.ok(place("P4", "phys.lab2", 8000)...)
	b.refused(t, exitRefused, "project phys.lab2 needs 501, 500 available", place("P5", "phys.lab2", 501)...)
	// lab1's HFS share is 3500 more, but lab2 holds what it borrowed: the
	// account has 8500 − 8000 = 500 left, and a lien needs both.
	b.refused(t, exitRefused, "project phys.lab1 needs 501, 500 available\n", place("P6", "phys.lab1", 501)...)
	// lab1 allocated 1500, lab2 8000; 10000 − 1500 − 8000 = 500 is left
	// over. Available: lab1 5000 − 1500 = 3500; lab2 (and phys, which takes
	// what reaches the root) 8500 − 8000 = 500.
	s, phys := sharesOf(b, "phys")
	if !s.HFS || !s.Pool.Equal(dec(t, "10000")) || !s.Leftover.Equal(dec(t, "500")) {
		t.Errorf("phys: hfs %v pool %s leftover %s; want on, 10000, 500", s.HFS, s.Pool, s.Leftover)
	}
	wantShare(t, phys["phys"], "0", "0", "0", "0", "500")
	wantShare(t, phys["phys.lab1"], "5000", "1500", "1500", "0", "3500")
	wantShare(t, phys["phys.lab2"], "5000", "8000", "0", "8000", "500")

	// chem: pool 1000; chem.a takes its static 600, chem.b the dynamic
	// 1 × (1000 − 600) = 400.
	b.ok(place("C1", "chem.a", 600)...)
	b.refused(t, exitRefused, "project chem.a needs 1, 0 available (its HFS share", place("C2", "chem.a", 1)...)
	// chem.b: a job held at 300 used 250, leaving 400 − 250 = 150 unused.
	b.ok(place("C3", "chem.b", 300)...)
	b.ok(chargeUsed("C3", 250)...)
	// Once chem.a accepts surplus it may borrow those 150: 600 + 150.
	b.ok("project", "policy", "chem.a", "--accept-surplus")
	b.ok(place("C4", "chem.a", 150)...)
	b.refused(t, exitRefused, "project chem.a needs 1, 0 available", place("C5", "chem.a", 1)...)
	// a allocated 750 (600 reserved by C1 + 150 by C4), b 250; nothing left.
	s, chem := sharesOf(b, "chem")
	if !s.HFS || !s.Pool.Equal(dec(t, "1000")) || !s.Leftover.IsZero() {
		t.Errorf("chem: hfs %v pool %s leftover %s; want on, 1000, 0", s.HFS, s.Pool, s.Leftover)
	}
	wantShare(t, chem["chem.a"], "600", "750", "0", "750", "0")
	wantShare(t, chem["chem.b"], "400", "250", "250", "0", "150")

	for _, account := range []string{"phys", "chem"} {
		t.Run(account, func(t *testing.T) { agreeWithCompute(t, b, account) })
	}
	// A lien on lab1 would get 500, the account's funds, though HFS would
	// give it 3500 more (Unused): lab2's liens hold what it borrowed.
	if out := b.ok("balance", "phys", "--parsable"); !strings.Contains(out, "phys|8500.00|8000.00|500.00|0.00|500.00\n") ||
		!strings.Contains(out, "Node|Quota|Allocated|Used|Reserved|Available|Unused\n") || !strings.Contains(out, "phys.lab2|5000.00|8000.00|0.00|8000.00|500.00|500.00\n") ||
		!strings.Contains(out, "phys.lab1|5000.00|1500.00|1500.00|0.00|500.00|3500.00\n") {
		t.Errorf("balance phys --parsable:\n%s", out)
	}
	if out := b.ok("balance", "chem"); !strings.Contains(out, "HFS split of chem: pool 1000.00, leftover 0.00") || !strings.Contains(out, "\n  chem.a  600.00") {
		t.Errorf("balance chem:\n%s", out)
	}
	if out := b.ok("hfs", "show", "chem"); !strings.Contains(out, "  chem.a  static:600   yes") {
		t.Errorf("hfs show chem:\n%s", out)
	}
}

// agreeWithCompute checks that `balance ACCOUNT --json` and `hfs show`
// report the same split, and that `hfs compute` on a file built from the
// shown pool, policies and demands (used + reserved) gives the same quotas,
// allocations and leftover.
func agreeWithCompute(t *testing.T, b *cliBank, account string) {
	shown, byName := sharesOf(b, account)
	var balances []struct {
		Node   string                `json:"node"`
		Shares *ledger.AccountShares `json:"shares"`
	}
	b.json(&balances, "balance", account)
	if len(balances) != 1 || balances[0].Shares == nil {
		t.Fatalf("balance %s --json: %+v", account, balances)
	}
	inBalance := balances[0].Shares
	inBalance.At = shown.At // read at two instants
	if got, want := mustJSON(t, inBalance), mustJSON(t, shown); got != want {
		t.Errorf("balance --json shares:\n%s\nhfs show --json:\n%s", got, want)
	}

	doc := mustJSON(t, map[string]any{"total": shown.Pool, "unit": "0.01", "tree": hfsTree(shown.Nodes)})
	computed := computeFile(t, b, []byte(doc))
	exact := new(big.Rat)
	for name, n := range byName {
		wantNumbers(t, "quota", map[string]string{name: n.Quota.String()}, computed.Quota, exact)
		wantNumbers(t, "allocated", map[string]string{name: n.Allocated.String()}, computed.Allocated, exact)
	}
	wantNumbers(t, "leftover", map[string]string{"": shown.Leftover.String()}, map[string]string{"": *computed.Leftover}, exact)
	if len(computed.Allocated) != len(byName) {
		t.Errorf("hfs compute has %d nodes, hfs show %d", len(computed.Allocated), len(byName))
	}
}

// hfsTree is the `hfs compute` tree of an account's shares: each node's
// policy, and its demand as used + reserved.
func hfsTree(nodes []ledger.NodeShare) map[string]any {
	byName := map[string]map[string]any{}
	var root map[string]any
	for _, n := range nodes { // an account first, a parent before its children
		m := map[string]any{
			"name":           n.Name,
			"demand":         n.Used.Add(n.Reserved),
			"accept_surplus": n.Policy.AcceptSurplus,
			"non_shared":     n.Policy.NonShared,
			"children":       []any{},
		}
		if n.Policy.QuotaKind != ledger.QuotaNone {
			m["quota"] = map[string]decimal.Decimal{string(n.Policy.QuotaKind): n.Policy.Quota}
		}
		if n.Policy.Limit != nil {
			m["limit"] = *n.Policy.Limit
		}
		byName[n.Name] = m
		if parent := byName[ledger.ParentOf(n.Name)]; parent != nil {
			parent["children"] = append(parent["children"].([]any), m)
		} else {
			root = m
		}
	}
	return root
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestBalanceShares: balance of an account with projects adds the split
// (or says HFS is off); of an account without projects, or --at, it does
// not, in any format.
func TestBalanceShares(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "bio")
	b.ok("project", "create", "bio.x")
	b.ok("account", "create", "solo")
	b.ok("deposit", "bio", "100")
	b.ok("deposit", "solo", "100")
	if out := b.ok("balance", "bio"); !strings.Contains(out, "no HFS policy in bio's tree: its projects share the account's pool") ||
		!strings.Contains(out, "  bio.x  -      -          0.00  0.00      100.00") {
		t.Errorf("balance of an account without HFS:\n%s", out)
	}
	if out := b.ok("hfs", "show", "bio"); !strings.Contains(out, "no HFS policy in bio's tree") {
		t.Errorf("hfs show of an account without HFS:\n%s", out)
	}
	var s ledger.AccountShares
	b.json(&s, "hfs", "show", "bio")
	if s.HFS || len(s.Nodes) != 2 || !s.Nodes[1].Available.Equal(dec(t, "100")) {
		t.Errorf("hfs show bio --json: %+v", s)
	}
	for _, cmd := range [][]string{{"balance", "solo"}, {"balance", "bio", "--at", "now"}, {"balance"}, {"balance", "bio.x"}} {
		if out := b.ok(cmd...); strings.Contains(out, "HFS") || strings.Contains(out, "Allocated") {
			t.Errorf("%v prints shares:\n%s", cmd, out)
		}
		if out := b.ok(append(cmd, "--json")...); strings.Contains(out, `"shares"`) {
			t.Errorf("%v --json prints shares:\n%s", cmd, out)
		}
	}
	b.refused(t, exitUsage, "is a project; HFS splits accounts", "hfs", "show", "bio.x")
	b.refused(t, exitNotFound, `no node named "nope"`, "hfs", "show", "nope")
}

// TestProjectPolicy: `project policy` changes only the settings given,
// and without flags shows the project.
func TestProjectPolicy(t *testing.T) {
	b := newHFSSite(t)
	// Each answer is decoded into a fresh node: JSON leaves out false and
	// empty policy fields, and decoding would keep the old ones.
	policy := func(args ...string) ledger.Policy {
		var n ledger.Node
		b.json(&n, append([]string{"project", "policy", "phys.lab2"}, args...)...)
		return n.Policy
	}
	p := policy("--limit", "7000", "--non-shared", "100")
	if p.QuotaKind != ledger.QuotaDynamic || !p.Quota.Equal(dec(t, "0.5")) || !p.AcceptSurplus ||
		p.Limit == nil || !p.Limit.Equal(dec(t, "7000")) || !p.NonShared.Equal(dec(t, "100")) {
		t.Errorf("after --limit --non-shared: %+v", p)
	}
	p = policy("--accept-surplus=false", "--limit", "none")
	if p.QuotaKind != ledger.QuotaDynamic || p.AcceptSurplus || p.Limit != nil || !p.NonShared.Equal(dec(t, "100")) {
		t.Errorf("after --accept-surplus=false --limit none: %+v", p)
	}
	before := b.entries()
	if out := b.ok("project", "policy", "phys.lab2"); !strings.Contains(out, "Quota          dynamic:0.5") {
		t.Errorf("project policy without flags:\n%s", out)
	}
	if b.entries() != before {
		t.Error("project policy without flags wrote to the journal")
	}
	if p = policy("--quota", "none", "--non-shared", "0"); p.QuotaKind != ledger.QuotaNone || !p.Quota.IsZero() {
		t.Errorf("after --quota none: %+v", p)
	}
}

// TestHFSRefusals: bad policies and bad input files exit with the
// documented code, say why (the ledger's own message for a policy it
// refuses; a value not in the bank's grammar of decimals, a negative one
// among them, is refused before), and write nothing.
func TestHFSRefusals(t *testing.T) {
	b := newHFSSite(t)
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed.json")
	os.WriteFile(malformed, []byte(`{"total": "100", "tree": {"name": "a", "children": [{"name": "a.b", "quota": {"dynamic": "1/2"}}]}}`), 0o600)
	rootQuota := filepath.Join(dir, "root-quota.json")
	os.WriteFile(rootQuota, []byte(`{"total": "100", "tree": {"name": "a", "quota": {"static": "5"}}}`), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"fraction above 1", []string{"project", "policy", "chem.b", "--quota", "dynamic:1.5"}, exitUsage, "policy of chem.b: dynamic quota 1.5 is not a fraction between 0 and 1"},
		{"negative fraction", []string{"project", "policy", "chem.b", "--quota", "dynamic:-0.1"}, exitUsage, `--quota "-0.1" is not a plain decimal number`},
		{"negative static", []string{"project", "policy", "chem.a", "--quota", "static:-5"}, exitUsage, `--quota "-5" is not a plain decimal number`},
		{"negative limit", []string{"project", "policy", "chem.a", "--limit", "-1"}, exitUsage, `--limit "-1" is not a plain decimal number`},
		{"negative non_shared", []string{"project", "policy", "chem.a", "--non-shared", "-1"}, exitUsage, `--non-shared "-1" is not a plain decimal number`},
		{"non_shared above a static quota", []string{"project", "policy", "chem.a", "--non-shared", "700"}, exitUsage, "non_shared 700 is above the static quota 600"},
		// chem.b's dynamic 1 is 1 × (1000 − 600) = 400 with today's pool.
		{"non_shared above a dynamic quota", []string{"project", "policy", "chem.b", "--non-shared", "500"}, exitUsage, "non_shared 500 is above its quota, 400 with the account's pool now"},
		{"unknown quota kind", []string{"project", "policy", "chem.a", "--quota", "weight:2"}, exitUsage, `unknown quota kind "weight"`},
		{"quota without a kind", []string{"project", "policy", "chem.a", "--quota", "5"}, exitUsage, "want static:CREDITS"},
		{"not a number", []string{"project", "policy", "chem.a", "--limit", "lots"}, exitUsage, `--limit "lots" is not a plain decimal number`},
		{"policy on an unknown node", []string{"project", "policy", "chem.zz", "--quota", "static:1"}, exitNotFound, `no node named "chem.zz"`},
		{"policy on an account", []string{"project", "policy", "chem", "--quota", "static:1"}, exitUsage, `"chem" is an account name`},
		{"hfs compute of a malformed file", []string{"hfs", "compute", malformed}, exitUsage, `hfs: invalid input: "1/2" is not a decimal number`},
		{"hfs compute of a tree HFS refuses", []string{"hfs", "compute", rootQuota}, exitUsage, "the root takes the pool and has no quota"},
		{"hfs compute of a missing file", []string{"hfs", "compute", filepath.Join(dir, "none.json")}, exitError, "no such file or directory"},
		{"hfs compute without a file", []string{"hfs", "compute"}, exitUsage, "takes 1 argument(s): FILE"},
		{"fairshare of a project", []string{"fairshare", "phys.lab1"}, exitNotFound, `"phys.lab1" is not an account`},
		{"negative compensation", []string{"fairshare", "phys", "--compensation", "-1"}, exitUsage, "must not be negative"},
		{"bad half-life", []string{"fairshare", "phys", "--half-life", "7d"}, exitUsage, "half-life"},
		{"hfs show with a quota refused", []string{"hfs", "show", "chem", "--with", "chem.b=dynamic:1.5"}, exitUsage, "policy of chem.b: dynamic quota 1.5 is not a fraction between 0 and 1"},
		{"hfs show with a malformed change", []string{"hfs", "show", "chem", "--with", "chem.b"}, exitUsage, "want NODE=QUOTA"},
		{"hfs show with a node of another account", []string{"hfs", "show", "chem", "--with", "phys.lab1=none"}, exitNotFound, `no node named "phys.lab1" in chem's tree`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.refused(t, tc.code, tc.says, tc.args...)
		})
	}
}

// TestFairShareCLI: the share tree of phys with both labs running jobs;
// lab1 has used 3000 credits and lab2 nothing.
func TestFairShareCLI(t *testing.T) {
	b := newHFSSite(t)
	b.ok(place("F1", "phys.lab1", 3000)...)
	b.ok(chargeUsed("F1", 3000)...)
	b.ok(place("F2", "phys.lab1", 100)...)
	b.ok(place("F3", "phys.lab2", 100)...)
	var nodes []ledger.FairShareNode
	b.json(&nodes, "fairshare", "phys", "--half-life", "0") // no decay: usage is exactly what was charged
	if len(nodes) != 3 {
		t.Fatalf("fairshare phys: %+v", nodes)
	}
	lab1, lab2 := nodes[1], nodes[2]
	// Equal shares, both active: a target of 0.5 each. lab1's usage weighs
	// its short-term entitlement down: lab2's jobs come first.
	if lab1.Name != "phys.lab1" || lab1.Usage != 3000 || lab2.Usage != 0 || lab1.Target != 0.5 || lab2.Target != 0.5 || !lab1.Active || !lab2.Active {
		t.Errorf("fairshare: %+v %+v", lab1, lab2)
	}
	if !(lab2.ShortTerm > lab1.ShortTerm && lab2.Priority > lab1.Priority) {
		t.Errorf("short-term: lab1 %+v, lab2 %+v", lab1, lab2)
	}
	if out := b.ok("fairshare", "phys", "--half-life", "0", "--parsable"); !strings.Contains(out, "Node|Shares|Usage|Target|ShortTerm|Priority|Active\n") ||
		!strings.Contains(out, "phys.lab1|5000|3000.00|0.500000|") {
		t.Errorf("fairshare --parsable:\n%s", out)
	}
	if out := b.ok("fairshare", "phys"); !strings.Contains(out, "\n  phys.lab2  5000") {
		t.Errorf("fairshare table:\n%s", out)
	}
	var decayed []ledger.FairShareNode
	b.json(&decayed, "fairshare", "phys", "--compensation", "2")
	if d := decayed[1].Usage; d > 3000 || d < 2999 {
		t.Errorf("usage decayed over a few milliseconds with a week's half-life: %g", d)
	}
}

// TestHFSShowRollUp: where a project has sub-projects, `hfs show` adds its
// subtree's quota, usage and liens rolled up, as the page does; a tree
// without groups keeps its columns.
func TestHFSShowRollUp(t *testing.T) {
	b := newCLIBank(t)
	for _, args := range [][]string{
		{"account", "create", "chem"}, {"project", "create", "chem.lab1", "--quota", "dynamic:0.6"}, {"project", "create", "chem.lab2", "--quota", "dynamic:0.4"},
		{"deposit", "chem", "1000"},
	} {
		b.ok(args...)
	}
	if out := b.ok("hfs", "show", "chem", "-P"); strings.Contains(out, "Subtree") {
		t.Errorf("hfs show without groups:\n%s", out)
	}
	b.ok("project", "create", "chem.lab1.x", "--quota", "dynamic:0.5")
	b.ok("project", "create", "chem.lab1.y", "--quota", "dynamic:0.5")
	out := b.ok("hfs", "show", "chem", "-P")
	var shares ledger.AccountShares
	b.json(&shares, "hfs", "show", "chem")
	for _, n := range shares.Nodes {
		row := n.Name + "|" + n.Policy.QuotaText()
		if !strings.Contains(out, row) || !strings.Contains(out, "|"+n.SubtreeQuota.StringFixed(2)+"|"+n.SubtreeUsed.StringFixed(2)+"|"+n.SubtreeReserved.StringFixed(2)+"\n") {
			t.Errorf("hfs show has no row %s with its subtree's figures:\n%s", row, out)
		}
	}
	if !strings.Contains(out, "|SubtreeQuota|SubtreeUsed|SubtreeReserved\n") {
		t.Errorf("hfs show's headers:\n%s", out)
	}
}

// TestHFSShowWith: `hfs show --with` is the split that setting the quota
// then gives (`hfs show` after `project policy --quota`), and writes
// nothing.
func TestHFSShowWith(t *testing.T) {
	b := newHFSSite(t)
	before := b.entries()
	var preview ledger.AccountShares
	b.json(&preview, "hfs", "show", "phys", "--with", "phys.lab1=dynamic:0.8", "--with", "phys.lab2=shares:3")
	if out := b.ok("hfs", "show", "phys", "--with", "phys.lab1=dynamic:0.8", "--with", "phys.lab2=shares:3"); !strings.Contains(out,
		"as it would be with phys.lab1=dynamic:0.8, phys.lab2=shares:3 (nothing is changed)") {
		t.Errorf("hfs show --with:\n%s", out)
	}
	if b.entries() != before {
		t.Fatal("hfs show --with wrote to the journal")
	}
	b.ok("project", "policy", "phys.lab1", "--quota", "dynamic:0.8")
	b.ok("project", "policy", "phys.lab2", "--quota", "shares:3")
	var after ledger.AccountShares
	b.json(&after, "hfs", "show", "phys")
	preview.At, after.At = time.Time{}, time.Time{}
	if !reflect.DeepEqual(preview, after) {
		t.Errorf("hfs show --with\n%+v\nis not hfs show after the change\n%+v", preview, after)
	}
}
