package hfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/hfs")

func TestDecodeInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want error // nil: decodes
	}{
		{"minimal", `{"total": "10", "tree": {"name": "a"}}`, nil},
		{"full node", `{"total": "10", "unit": "0.01", "tree": {"name": "a", "demand": "1", "children": [
			{"name": "a.b", "quota": {"shares": "2"}, "demand": "unbounded", "accept_surplus": true, "limit": "5", "non_shared": "1"}]}}`, nil},
		{"ownership and priority", `{"total": "10", "tree": {"name": "a", "children": [
			{"name": "a.g", "group_non_shared": "2", "priority": 3, "children": [{"name": "a.g.x", "ownership": "4", "priority": 1000}]}]}}`, nil},
		{"fractional priority", `{"total": "10", "tree": {"name": "a", "priority": 1.5}}`, ErrInput},
		{"priority as a string", `{"total": "10", "tree": {"name": "a", "priority": "1"}}`, ErrInput},
		{"JSON numbers read from their text", `{"total": 10.25, "unit": null, "tree": {"name": "a", "demand": 3}}`, nil},
		{"reference case keys ignored", `{"id": "X", "title": "t", "note": "", "schema": "s", "tolerance": "", "derivation": ["d"], "expected": {"leftover": "1"}, "total": "1", "tree": {"name": "a"}}`, nil},
		{"unknown top-level key", `{"total": "10", "totl": "1", "tree": {"name": "a"}}`, ErrInput},
		{"unknown node key", `{"total": "10", "tree": {"name": "a", "shares": "1"}}`, ErrInput},
		{"two quota kinds", `{"total": "10", "tree": {"name": "a", "children": [{"name": "b", "quota": {"static": "1", "shares": "1"}}]}}`, ErrInput},
		{"empty quota", `{"total": "10", "tree": {"name": "a", "children": [{"name": "b", "quota": {}}]}}`, ErrInput},
		{"exponent", `{"total": "1e3", "tree": {"name": "a"}}`, ErrInput},
		{"not a number", `{"total": "ten", "tree": {"name": "a"}}`, ErrInput},
		{"fraction", `{"total": "1/3", "tree": {"name": "a"}}`, ErrInput},
		{"no total", `{"tree": {"name": "a"}}`, ErrInput},
		{"no tree", `{"total": "1"}`, ErrInput},
		{"null child", `{"total": "1", "tree": {"name": "a", "children": [null]}}`, ErrInput},
		{"trailing data", `{"total": "1", "tree": {"name": "a"}} {}`, ErrInput},
		{"not JSON", `total: 1`, ErrInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeInput(strings.NewReader(tc.doc))
			if tc.want == nil && err != nil || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeInputValues(t *testing.T) {
	in, err := DecodeInput(strings.NewReader(`{"total": "10.5", "unit": "0.01", "tree": {"name": "a", "children": [
		{"name": "b", "quota": {"dynamic": "0.25"}, "demand": "unbounded", "limit": "3", "group_non_shared": "1.5", "priority": 7},
		{"name": "c", "ownership": "2"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, c := in.Tree.Children[0], in.Tree.Children[1]
	for _, tc := range []struct {
		name      string
		got, want *big.Rat
	}{
		{"total", in.Total, big.NewRat(21, 2)},
		{"unit", in.Unit, big.NewRat(1, 100)},
		{"b quota", b.Quota.Value, big.NewRat(1, 4)},
		{"b limit", b.Limit, big.NewRat(3, 1)},
		{"c demand (absent: 0)", c.Demand, new(big.Rat)},
		{"b group non-shared", b.GroupNonShared, big.NewRat(3, 2)},
		{"c ownership", c.Ownership, big.NewRat(2, 1)},
	} {
		if tc.got == nil || tc.got.Cmp(tc.want) != 0 {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if b.Quota.Kind != Dynamic || b.Demand != nil || c.Limit != nil || c.Quota.Value != nil || b.Priority != 7 || c.Priority != 0 || b.Ownership != nil {
		t.Errorf("b: %+v, c: %+v", b, c)
	}
}

func TestComputeErrors(t *testing.T) {
	leaf := func(n *Node) *Node { return &Node{Name: "root", Children: []*Node{n}} }
	ten := big.NewRat(10, 1)
	for _, tc := range []struct {
		name        string
		total, unit *big.Rat
		root        *Node
		want        error
	}{
		{"nil root", ten, nil, nil, ErrNilNode},
		{"nil pool", nil, nil, &Node{Name: "a"}, ErrInput},
		{"negative pool", big.NewRat(-1, 1), nil, &Node{Name: "a"}, ErrNegative},
		{"zero unit", ten, new(big.Rat), &Node{Name: "a"}, ErrUnit},
		{"too many units", big.NewRat(1<<62, 1), big.NewRat(1, 100), &Node{Name: "a"}, ErrTooManyUnits},
		{"empty name", ten, nil, leaf(&Node{}), ErrEmptyName},
		{"duplicate name", ten, nil, leaf(&Node{Name: "root"}), ErrDuplicateName},
		{"nil child", ten, nil, leaf(nil), ErrNilNode},
		{"root quota", ten, nil, &Node{Name: "a", Quota: Quota{Kind: Static, Value: ten}}, ErrRootQuota},
		{"dynamic above 1", ten, nil, leaf(&Node{Name: "b", Quota: Quota{Kind: Dynamic, Value: big.NewRat(3, 2)}}), ErrDynamicRange},
		{"negative dynamic", ten, nil, leaf(&Node{Name: "b", Quota: Quota{Kind: Dynamic, Value: big.NewRat(-1, 2)}}), ErrDynamicRange},
		{"negative static", ten, nil, leaf(&Node{Name: "b", Quota: Quota{Kind: Static, Value: big.NewRat(-1, 1)}}), ErrNegative},
		{"negative shares", ten, nil, leaf(&Node{Name: "b", Quota: Quota{Kind: Shares, Value: big.NewRat(-1, 1)}}), ErrNegative},
		{"unknown kind", ten, nil, leaf(&Node{Name: "b", Quota: Quota{Kind: 7}}), ErrQuotaKind},
		{"negative demand", ten, nil, leaf(&Node{Name: "b", Demand: big.NewRat(-1, 1)}), ErrNegative},
		{"negative limit", ten, nil, leaf(&Node{Name: "b", Limit: big.NewRat(-1, 1)}), ErrNegative},
		{"negative non_shared", ten, nil, leaf(&Node{Name: "b", NonShared: big.NewRat(-1, 1)}), ErrNegative},
		{"negative ownership", ten, nil, leaf(&Node{Name: "b", Ownership: big.NewRat(-1, 1)}), ErrNegative},
		{"negative group non-shared", ten, nil, leaf(&Node{Name: "b", GroupNonShared: big.NewRat(-1, 1)}), ErrNegative},
		{"ownership on a group", ten, nil, leaf(&Node{Name: "b", Ownership: ten, Children: []*Node{{Name: "c"}}}), ErrGroupOwnership},
		{"negative priority", ten, nil, leaf(&Node{Name: "b", Priority: -1}), ErrPriorityRange},
		{"priority above the range", ten, nil, leaf(&Node{Name: "b", Priority: MaxPriority + 1}), ErrPriorityRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(tc.total, tc.unit, tc.root)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "hfs: ") {
				t.Fatalf("message %q lacks the hfs: prefix", err)
			}
		})
	}
}

func TestCycleIsRefused(t *testing.T) {
	a := &Node{Name: "a"}
	a.Children = []*Node{{Name: "b", Children: []*Node{a}}}
	if _, err := Compute(big.NewRat(1, 1), nil, a); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("got %v, want %v", err, ErrDuplicateName)
	}
}

func TestFormatAmount(t *testing.T) {
	for _, tc := range []struct {
		in   *big.Rat
		want string
	}{
		{big.NewRat(10, 1), "10"},
		{big.NewRat(9, 2), "4.5"},
		{big.NewRat(1, 1024), "0.0009765625"},
		{big.NewRat(10, 3), "3.333333333333"},
		{big.NewRat(2, 3), "0.666666666667"},
		{new(big.Rat), "0"},
	} {
		if got := FormatAmount(tc.in); got != tc.want {
			t.Errorf("FormatAmount(%s) = %s, want %s", tc.in.RatString(), got, tc.want)
		}
	}
}

// TestEncodeJSONGolden runs testdata/hfs/compute-example.json through the
// decoder, Compute and the encoder, as `ingot hfs compute` does, and
// compares the output with compute-example.golden (go test -update
// rewrites it).
func TestEncodeJSONGolden(t *testing.T) {
	dir := filepath.Join("..", "testdata", "hfs")
	input, err := os.ReadFile(filepath.Join(dir, "compute-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := computeFile(t, input)
	golden := filepath.Join(dir, "compute-example.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("output differs from %s:\n%s", golden, out.Bytes())
	}
}

// FuzzDecodeInput: decoding then computing never panics, and whatever
// computes keeps every invariant checkInvariants lists and encodes to
// JSON.
func FuzzDecodeInput(f *testing.F) {
	for _, file := range []string{"hgq-cases.json", "extension-cases.json"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "hfs", file))
		if err != nil {
			f.Fatal(err)
		}
		var cases caseFile
		if err := json.Unmarshal(data, &cases); err != nil {
			f.Fatal(err)
		}
		for _, c := range cases.Cases {
			f.Add([]byte(c))
		}
	}
	f.Add([]byte(`{"total": "1", "tree": {"name": "a"}}`))
	f.Add([]byte(`{"total": "4", "unit": "1", "tree": {"name": "r", "children": [{"name": "r.a", "group_non_shared": "1", "priority": 2, "accept_surplus": true,
		"children": [{"name": "r.a.x", "ownership": "2", "demand": "1"}]}, {"name": "r.b", "ownership": "3", "demand": "unbounded"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeInput(bytes.NewReader(data))
		if err != nil {
			return
		}
		res, err := Compute(in.Total, in.Unit, in.Tree)
		if err != nil {
			return
		}
		if err := checkInvariants(in.Total, in.Unit, in.Tree, res); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := res.EncodeJSON(&out); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out.Bytes()) {
			t.Fatalf("output is not JSON:\n%s", out.Bytes())
		}
	})
}
