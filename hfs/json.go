package hfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"regexp"
)

// Input is an HFS input document, as `ingot hfs compute FILE` reads it:
//
//	{"total": "20", "unit": "0.01" | null, "tree": NODE}
//	NODE = {"name": "chem", "quota": {"static"|"dynamic"|"shares": "N"},
//	        "demand": "N" | "unbounded", "accept_surplus": bool,
//	        "limit": "N", "non_shared": "N", "ownership": "N",
//	        "group_non_shared": "N", "priority": INTEGER,
//	        "children": [NODE, ...]}
//
// Numbers are decimal strings (plain JSON numbers are taken too, read from
// their text, never through float64); a priority is a JSON integer. Absent
// or null: unit means no rounding, quota means dynamic 0, demand means 0,
// limit means none, non_shared, ownership and group_non_shared mean 0,
// priority means 0. Unknown keys are refused, except the descriptive keys
// of a reference case (id, title, note, schema, tolerance, derivation,
// expected), which are ignored so that a case from testdata/hfs runs as it
// is.
type Input struct {
	Total *big.Rat
	Unit  *big.Rat // nil: exact, no rounding
	Tree  *Node
}

type inputJSON struct {
	Total *number   `json:"total"`
	Unit  *number   `json:"unit"`
	Tree  *nodeJSON `json:"tree"`

	// The descriptive keys of a reference case, read and ignored.
	ID         json.RawMessage `json:"id"`
	Title      json.RawMessage `json:"title"`
	Note       json.RawMessage `json:"note"`
	Schema     json.RawMessage `json:"schema"`
	Tolerance  json.RawMessage `json:"tolerance"`
	Derivation json.RawMessage `json:"derivation"`
	Expected   json.RawMessage `json:"expected"`
}

type nodeJSON struct {
	Name           string      `json:"name"`
	Quota          *quotaJSON  `json:"quota"`
	Demand         *demandJSON `json:"demand"`
	AcceptSurplus  bool        `json:"accept_surplus"`
	Limit          *number     `json:"limit"`
	NonShared      *number     `json:"non_shared"`
	Ownership      *number     `json:"ownership"`
	GroupNonShared *number     `json:"group_non_shared"`
	Priority       int         `json:"priority"`
	Children       []*nodeJSON `json:"children"`
}

type quotaJSON struct {
	Static  *number `json:"static"`
	Dynamic *number `json:"dynamic"`
	Shares  *number `json:"shares"`
}

// DecodeInput reads one HFS input document. It checks the document's shape
// and numbers; Compute checks the tree itself.
func DecodeInput(r io.Reader) (*Input, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var doc inputJSON
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the document", ErrInput)
	}
	if doc.Total == nil {
		return nil, fmt.Errorf("%w: no total", ErrInput)
	}
	if doc.Tree == nil {
		return nil, fmt.Errorf("%w: no tree", ErrInput)
	}
	tree, err := doc.Tree.node()
	if err != nil {
		return nil, err
	}
	return &Input{Total: &doc.Total.Rat, Unit: doc.Unit.rat(), Tree: tree}, nil
}

func (n *nodeJSON) node() (*Node, error) {
	if n == nil {
		return nil, fmt.Errorf("%w: null node", ErrInput)
	}
	out := &Node{
		Name:           n.Name,
		Demand:         new(big.Rat),
		AcceptSurplus:  n.AcceptSurplus,
		Limit:          n.Limit.rat(),
		NonShared:      n.NonShared.rat(),
		Ownership:      n.Ownership.rat(),
		GroupNonShared: n.GroupNonShared.rat(),
		Priority:       n.Priority,
		Children:       make([]*Node, len(n.Children)),
	}
	if n.Demand != nil {
		out.Demand = n.Demand.value
	}
	if n.Quota != nil {
		q, err := n.Quota.quota(n.Name)
		if err != nil {
			return nil, err
		}
		out.Quota = q
	}
	for i, c := range n.Children {
		var err error
		if out.Children[i], err = c.node(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (q *quotaJSON) quota(node string) (Quota, error) {
	var out Quota
	kinds := 0
	for _, k := range []struct {
		kind  QuotaKind
		value *number
	}{{Static, q.Static}, {Dynamic, q.Dynamic}, {Shares, q.Shares}} {
		if k.value != nil {
			out = Quota{Kind: k.kind, Value: &k.value.Rat}
			kinds++
		}
	}
	if kinds != 1 {
		return Quota{}, fmt.Errorf("%w: node %q: a quota needs exactly one of static, dynamic, shares", ErrInput, node)
	}
	return out, nil
}

// number is a decimal read exactly from its JSON text.
type number struct{ big.Rat }

// decimalPattern is a plain decimal: no exponent, so that no input can ask
// for a number with a billion digits.
var decimalPattern = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

func (n *number) UnmarshalJSON(b []byte) error {
	text, err := unquote(b)
	if err != nil {
		return err
	}
	if !decimalPattern.MatchString(text) {
		return fmt.Errorf("%q is not a decimal number", text) // DecodeInput adds ErrInput
	}
	n.SetString(text)
	return nil
}

func (n *number) rat() *big.Rat {
	if n == nil {
		return nil
	}
	return &n.Rat
}

// unquote is the text of a JSON string, or the literal itself for any
// other JSON value.
func unquote(b []byte) (string, error) {
	if len(b) == 0 || b[0] != '"' {
		return string(b), nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", err
	}
	return s, nil
}

// demandJSON is a number or "unbounded".
type demandJSON struct {
	value *big.Rat // nil: unbounded
}

func (d *demandJSON) UnmarshalJSON(b []byte) error {
	if text, err := unquote(b); err == nil && text == "unbounded" {
		d.value = nil
		return nil
	}
	var n number
	if err := n.UnmarshalJSON(b); err != nil {
		return err
	}
	d.value = &n.Rat
	return nil
}

// inexactPlaces is how many decimal places a number with no finite
// decimal expansion (10/3) is printed with; the design asks for at least 9.
const inexactPlaces = 12

// EncodeJSON writes the result as `ingot hfs compute` prints it:
//
//	{"quota": {name: n}, "allocated": {name: n}, "leftover": n,
//	 "warnings": [text, ...]}
//
// where warnings, present only when there are any, are Result.Warnings:
// the nodes left short of their ownership, group non-shared or non_shared,
// by name.
//
// with nodes in pre-order and numbers as decimal strings: exact whenever the
// number has a finite decimal expansion (always so for allocations rounded
// to a unit), otherwise rounded to 12 decimal places.
func (r *Result) EncodeJSON(w io.Writer) error {
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for _, obj := range []struct {
		key   string
		value func(i int) num
	}{
		{"quota", func(i int) num { return r.nodes[i].ownQuota }},
		{"allocated", func(i int) num { return r.alloc[i] }},
	} {
		fmt.Fprintf(&buf, "  %q: {", obj.key)
		for i := range r.nodes {
			name, err := json.Marshal(r.nodes[i].name)
			if err != nil {
				return fmt.Errorf("hfs: encoding node name: %w", err)
			}
			sep := ","
			if i == len(r.nodes)-1 {
				sep = ""
			}
			fmt.Fprintf(&buf, "\n    %s: %q%s", name, FormatAmount(obj.value(i).readRat()), sep)
		}
		buf.WriteString("\n  },\n")
	}
	fmt.Fprintf(&buf, "  \"leftover\": %q", FormatAmount(r.leftover.readRat()))
	if warnings := r.Warnings(); len(warnings) > 0 {
		buf.WriteString(",\n  \"warnings\": [")
		for k, w := range warnings {
			text, err := json.Marshal(w)
			if err != nil {
				return fmt.Errorf("hfs: encoding a warning: %w", err)
			}
			sep := ","
			if k == len(warnings)-1 {
				sep = ""
			}
			fmt.Fprintf(&buf, "\n    %s%s", text, sep)
		}
		buf.WriteString("\n  ]")
	}
	buf.WriteString("\n}\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// FormatAmount prints x as a decimal: exactly when its decimal expansion is
// finite, otherwise rounded to 12 decimal places.
func FormatAmount(x *big.Rat) string {
	places, exact := decimalPlaces(x.Denom())
	if !exact {
		places = inexactPlaces
	}
	return x.FloatString(places)
}

// decimalPlaces is how many decimal places a fraction with denominator den
// (in lowest terms) needs, and whether that number is finite: it is iff
// den = 2^a·5^b, and then it is max(a, b).
func decimalPlaces(den *big.Int) (int, bool) {
	d := new(big.Int).Set(den)
	twos := int(d.TrailingZeroBits())
	d.Rsh(d, uint(twos))
	fives := 0
	five := big.NewInt(5)
	var q, m big.Int
	for {
		q.QuoRem(d, five, &m)
		if m.Sign() != 0 {
			break
		}
		d.Set(&q)
		fives++
	}
	return max(twos, fives), d.IsInt64() && d.Int64() == 1
}
