package hfs

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNonSharedFirstLSFExample runs LSF's own example (testdata/
// lsf-nonshared-first.json, as `ingot hfs compute` reads it): non-shared
// set on two levels adds up to 6 of 4 tokens, and License Scheduler
// satisfies it from the top, so G2 and G1 get their 2 each and AP2 and AP1
// below G1 nothing of theirs, and are warned of by name. Spread pro rata
// over every level instead, G2 would get 4/3 of its 2.
func TestNonSharedFirstLSFExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "lsf-nonshared-first.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Expected struct {
			expectedNumbers
			Reserved map[string]string `json:"reserved"`
			Short    []string          `json:"short"`
		} `json:"expected"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	out := computeFile(t, raw)
	var printed struct {
		expectedNumbers
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.Bytes())
	}
	exact := new(big.Rat)
	compareNumbers(t, "quota", c.Expected.Quota, printed.Quota, exact)
	compareNumbers(t, "allocated", c.Expected.Allocated, printed.Allocated, exact)
	compareNumbers(t, "leftover", map[string]string{"": *c.Expected.Leftover}, map[string]string{"": *printed.Leftover}, exact)

	in, err := DecodeInput(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compute(in.Total, in.Unit, in.Tree)
	if err != nil {
		t.Fatal(err)
	}
	reserved := map[string]string{}
	for name := range c.Expected.Reserved {
		reserved[name] = res.Reserved(name).RatString()
	}
	compareNumbers(t, "reserved", c.Expected.Reserved, reserved, exact)
	if got := shortNames(res.Shortfalls()); !slices.Equal(got, c.Expected.Short) {
		t.Errorf("short: %v, want %v", got, c.Expected.Short)
	}
	if len(printed.Warnings) != 1 || !strings.Contains(printed.Warnings[0], "short AP2 0 of 1, AP1 0 of 1") {
		t.Errorf("warnings: %q", printed.Warnings)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out.Bytes())
	}
}

func shortNames(s []Shortfall) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

// TestLevelByLevel: ownership and group non-shared over-subscribed across
// levels are satisfied level by level from the top; a level that does not
// fit shares what is left in proportion to its claims, and the levels below
// it get nothing. Each case gives what every node gets of its own claims
// (reserved + owned), and who is short.
func TestLevelByLevel(t *testing.T) {
	type node struct {
		name, parent                  string
		shares                        int64
		reserve, ownership, nonShared string
		limit                         string
	}
	for _, tc := range []struct {
		name  string
		total string
		nodes []node
		got   map[string]string // own reserve + ownership carved
		quota map[string]string // own quota, where checked
		short []string
	}{{
		// LSF's example with the projects owning their token instead.
		name: "projects own below reserving groups", total: "4",
		nodes: []node{{name: "G2", shares: 1, reserve: "2"}, {name: "G1", shares: 1, reserve: "2"},
			{name: "AP2", parent: "G1", shares: 1, ownership: "1"}, {name: "AP1", parent: "G1", shares: 1, ownership: "1"}},
		got:   map[string]string{"G2": "2", "G1": "2", "AP2": "0", "AP1": "0"},
		short: []string{"AP2", "AP1"},
	}, {
		// LSF's "correct configuration" of the same example: 2 + 0 + 1 + 1
		// fits in 4, everyone gets what it set.
		name: "the example's correct configuration", total: "4",
		nodes: []node{{name: "G2", shares: 1, reserve: "2"}, {name: "G1", shares: 1},
			{name: "AP2", parent: "G1", shares: 1, reserve: "1"}, {name: "AP1", parent: "G1", shares: 1, reserve: "1"}},
		got:   map[string]string{"G2": "2", "G1": "0", "AP2": "1", "AP1": "1"},
		quota: map[string]string{"root": "0", "G2": "2", "G1": "0", "AP2": "1", "AP1": "1"},
	}, {
		// Three levels in 10: the first (4 + 2) fits, the second (3 + 4)
		// gets the 4 left, 12/7 and 16/7, the third nothing.
		name: "the second level shares what is left, the third gets nothing", total: "10",
		nodes: []node{{name: "A", shares: 1, reserve: "4"}, {name: "A1", parent: "A", shares: 1, reserve: "3"},
			{name: "A1x", parent: "A1", shares: 1, ownership: "5"}, {name: "B", shares: 1, reserve: "2"},
			{name: "B1", parent: "B", shares: 1, ownership: "4"}},
		got:   map[string]string{"A": "4", "A1": "12/7", "A1x": "0", "B": "2", "B1": "16/7"},
		short: []string{"A1", "A1x", "B1"},
	}, {
		// A limit below a subtree's claims: inside it, the same rule. A's
		// carve (4) fits in the pool and the 6 left are split by shares, 3
		// each; A's limit cuts its 7 to 3, and the cut stays with the root:
		// A keeps its reserve of 2, A1 gets the 1 left.
		name: "a limit short of the claims below it", total: "10",
		nodes: []node{{name: "A", shares: 1, reserve: "2", limit: "3"}, {name: "A1", parent: "A", shares: 1, ownership: "2"},
			{name: "B", shares: 1}},
		got:   map[string]string{"A": "2", "A1": "1"},
		quota: map[string]string{"root": "4", "A": "2", "A1": "1", "B": "3"},
		short: []string{"A1"},
	}, {
		// The example with the projects' non-shared as non_shared: the
		// carve gives the groups their 2 each and G1's projects a quota of
		// 0, which bounds what their non_shared holds.
		name: "non_shared above the own quota", total: "4",
		nodes: []node{{name: "G2", shares: 1, reserve: "2"}, {name: "G1", shares: 1, reserve: "2"},
			{name: "AP2", parent: "G1", shares: 1, nonShared: "1"}, {name: "AP1", parent: "G1", shares: 1, nonShared: "1"}},
		got:   map[string]string{"G2": "2", "G1": "2"},
		quota: map[string]string{"G2": "2", "G1": "2", "AP2": "0", "AP1": "0"},
		short: []string{"AP2", "AP1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := &Node{Name: "root", Demand: new(big.Rat)}
			byName := map[string]*Node{"": root}
			opt := func(s string) *big.Rat {
				if s == "" {
					return nil
				}
				return rat(s)
			}
			for _, n := range tc.nodes {
				hn := &Node{Name: n.name, Quota: Quota{Kind: Shares, Value: big.NewRat(n.shares, 1)}, Demand: new(big.Rat),
					GroupNonShared: opt(n.reserve), Ownership: opt(n.ownership), NonShared: opt(n.nonShared), Limit: opt(n.limit)}
				byName[n.parent].Children = append(byName[n.parent].Children, hn)
				byName[n.name] = hn
			}
			res, err := Compute(rat(tc.total), nil, root)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.got {
				own := res.Owned(name)
				for _, c := range byName[name].Children {
					own.Sub(own, res.Owned(c.Name))
				}
				if got := own.Add(own, res.Reserved(name)); got.Cmp(rat(want)) != 0 {
					t.Errorf("%s gets %s of its own claims, want %s", name, got.RatString(), want)
				}
			}
			for name, want := range tc.quota {
				if got := res.Quota(name); got.Cmp(rat(want)) != 0 {
					t.Errorf("%s: own quota %s, want %s", name, got.RatString(), want)
				}
			}
			if got := shortNames(res.Shortfalls()); !slices.Equal(got, tc.short) {
				t.Errorf("short: %v, want %v (%q)", got, tc.short, res.Warnings())
			}
		})
	}
}

// rat reads a test's number: a decimal or a fraction.
func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("not a number: " + s)
	}
	return r
}
