package gold

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// Queries answer rows of an object's fields, as Gold's listing clients
// (gbalance, glsres, glstxn, gstatement) ask for them: the rows that meet
// every Where condition, each with the fields the Gets name, in their
// order (all the object's fields when none is named). A Get or Where of a
// field the object does not have is refused (314) rather than answered
// empty or ignored, and so is an option the query does not read (315):
// either would answer another question than the one asked.

// row is one row of a query: its fields by name.
type row map[string]string

// checkQuery checks a query's Gets, Wheres and options against the
// object's fields and the options it reads.
func (c *call) checkQuery(fields []string, options ...string) error {
	for _, g := range c.Gets {
		if g.Op != "" {
			return Errorf(CodeNotImplemented, "Get %s with op %s: aggregates are not implemented", g.Name, ledger.Excerpt(g.Op))
		}
	}
	for _, w := range c.Wheres {
		if _, err := compare(w.Op); err != nil {
			return err
		}
		if w.Conj != "" && !strings.EqualFold(w.Conj, "And") || w.Group != "" && w.Group != "0" {
			return Errorf(CodeNotImplemented, "Where %s: conditions joined otherwise than by And are not implemented", w.Name)
		}
	}
	for _, p := range slices.Concat(c.Gets, c.Wheres) {
		if !slices.Contains(fields, p.Name) {
			return Errorf(CodeBadData, "%s has no field %s; its fields are %s", c.Object, p.Name, strings.Join(fields, ", "))
		}
	}
	if len(c.Sets) > 0 || len(c.Data) > 0 {
		return Errorf(CodeBadData, "a Query takes no Set or Data")
	}
	for _, o := range c.Options {
		if !slices.Contains(options, o.Name) {
			return Errorf(CodeNotImplemented, "option %s of %s %s is not implemented", o.Name, c.Object, c.Action)
		}
	}
	return nil
}

// equal is the value of an equality condition on name, for the query to
// ask the bank for less; the condition is still applied to every row.
func (c *call) equal(name string) string {
	for _, w := range c.Wheres {
		if w.Name == name && (w.Op == "" || strings.EqualFold(w.Op, "EQ")) {
			return w.Value
		}
	}
	return ""
}

// rows is the response of a query: the rows meeting the conditions, with
// the fields asked for; Count is their number.
func (c *call) rows(fields []string, all []row) Response {
	shown := fields
	if len(c.Gets) > 0 {
		shown = make([]string, len(c.Gets))
		for i, g := range c.Gets {
			shown[i] = g.Name
		}
	}
	var data []Element
	for _, r := range all {
		if !c.meets(r) {
			continue
		}
		e := Element{Name: c.Object, Children: make([]Element, len(shown))}
		for i, f := range shown {
			e.Children[i] = field(f, r[f])
		}
		data = append(data, e)
	}
	return Response{Code: CodeSuccess, Message: "Successfully queried " + strconv.Itoa(len(data)) + " " + strings.ToLower(c.Object) + "s",
		Count: strconv.Itoa(len(data)), Data: data}
}

// meets reports whether a row meets every condition.
func (c *call) meets(r row) bool {
	for _, w := range c.Wheres {
		op, _ := compare(w.Op)
		if !op(r[w.Name], w.Value) {
			return false
		}
	}
	return true
}

// compare is the comparison of a Where's op: eq (the default), ne, lt,
// le, gt, ge, in any case, and match, Gold's pattern where % is any text.
// Two numbers compare as numbers, anything else as text.
func compare(op string) (func(a, b string) bool, error) {
	ordered := func(keep func(int) bool) func(a, b string) bool {
		return func(a, b string) bool { return keep(order(a, b)) }
	}
	switch strings.ToLower(op) {
	case "", "eq":
		return ordered(func(n int) bool { return n == 0 }), nil
	case "ne":
		return ordered(func(n int) bool { return n != 0 }), nil
	case "lt":
		return ordered(func(n int) bool { return n < 0 }), nil
	case "le":
		return ordered(func(n int) bool { return n <= 0 }), nil
	case "gt":
		return ordered(func(n int) bool { return n > 0 }), nil
	case "ge":
		return ordered(func(n int) bool { return n >= 0 }), nil
	case "match":
		return func(a, pattern string) bool {
			parts := strings.Split(pattern, "%")
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(a)
		}, nil
	}
	return nil, Errorf(CodeNotImplemented, "Where op %s is not implemented (eq, ne, lt, le, gt, ge, match)", ledger.Excerpt(op))
}

// order compares two values as numbers if both are, else as text.
func order(a, b string) int {
	x, errA := decimal.NewFromString(a)
	y, errB := decimal.NewFromString(b)
	if errA == nil && errB == nil {
		return x.Cmp(y)
	}
	return strings.Compare(a, b)
}
