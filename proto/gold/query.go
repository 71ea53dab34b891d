package gold

import (
	"cmp"
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
		if _, ok := getOps[strings.ToLower(g.Op)]; !ok {
			return Errorf(CodeNotImplemented, "Get %s with op %s is not implemented (Sort, Tally, GroupBy, Sum, Count, Max, Min)", g.Name, ledger.Excerpt(g.Op))
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

// getOps are the ops of a Get: none (the field), Sort (the field, the
// rows in its ascending order; Tally is Gold's descending Sort), GroupBy
// (one row for each value of the field; with an aggregate and a group,
// a Sort orders the groups by what they answer) and the aggregates over a group's
// rows, Sum, Count, Max and Min. With an aggregate and no GroupBy all the
// rows are one group.
var getOps = map[string]bool{"": false, "sort": false, "tally": false, "groupby": true, "sum": true, "count": true, "max": true, "min": true}

// rows is the response of a query: the rows meeting the conditions, in
// the order the Sorts ask, with a field for each Get (Gold's clients read
// the fields by place, a field asked twice twice), or their groups'
// aggregates; Count is the number of
// rows answered.
func (c *call) rows(fields []string, all []row) (Response, error) {
	if f, ok := accountIDFields[c.Object]; ok {
		var err error
		for _, r := range all {
			if r[f], err = c.accountID(r[f]); err != nil {
				return Response{}, err
			}
		}
		// A condition may name the account by name: it is compared as
		// its number.
		for i, w := range c.Wheres {
			if w.Name == f {
				if c.Wheres[i].Value, err = c.accountID(w.Value); err != nil {
					return Response{}, err
				}
			}
		}
	}
	gets := c.Gets
	if len(gets) == 0 {
		gets = make([]Param, len(fields))
		for i, f := range fields {
			gets[i] = Param{Name: f}
		}
	}
	var kept []row
	for _, r := range all {
		if c.meets(r) {
			kept = append(kept, r)
		}
	}
	// value is a Get's value in a row: the field's, or in a group's row
	// its aggregate, kept under the name answered.
	value := func(r row, g Param) string { return r[g.Name] }
	if c.aggregates() {
		kept = c.groups(kept)
		value = func(r row, g Param) string { return r[shownName(g)] }
	}
	c.sort(kept, value)
	data := make([]Element, len(kept))
	for i, r := range kept {
		e := Element{Name: c.Object, Children: make([]Element, len(gets))}
		for j, g := range gets {
			e.Children[j] = field(shownName(g), value(r, g))
		}
		data[i] = e
	}
	return Response{Code: CodeSuccess, Message: "Successfully queried " + strconv.Itoa(len(data)) + " " + strings.ToLower(c.Object) + "s",
		Count: strconv.Itoa(len(data)), Data: data}, nil
}

// shownName is the name a Get's field is answered under: its alias, if
// it has one.
func shownName(g Param) string { return cmp.Or(g.Alias, g.Name) }

// aggregates reports whether a Get groups or aggregates.
func (c *call) aggregates() bool {
	return slices.ContainsFunc(c.Gets, func(g Param) bool { return getOps[strings.ToLower(g.Op)] })
}

// groups makes one row of each group of rows with the same GroupBy
// fields, in the order the groups first appear: the GroupBy fields, and
// each aggregate under its field's name. A field neither grouped nor
// aggregated is left empty.
func (c *call) groups(rows []row) []row {
	var out []row
	index := map[string]int{}
	for _, r := range rows {
		var key strings.Builder
		for _, g := range c.Gets {
			if strings.EqualFold(g.Op, "GroupBy") {
				key.WriteString(r[g.Name] + "\x00")
			}
		}
		i, ok := index[key.String()]
		if !ok {
			i = len(out)
			index[key.String()] = i
			out = append(out, row{})
		}
		g := out[i]
		for _, get := range c.Gets {
			v, name := r[get.Name], shownName(get)
			switch strings.ToLower(get.Op) {
			case "groupby":
				g[name] = v
			case "count":
				g[name] = add(g[name], "1")
			case "sum":
				g[name] = add(g[name], cmp.Or(v, "0"))
			case "max":
				if _, seen := g[name]; !seen || order(v, g[name]) > 0 {
					g[name] = v
				}
			case "min":
				if _, seen := g[name]; !seen || order(v, g[name]) < 0 {
					g[name] = v
				}
			}
		}
	}
	return out
}

// add is the sum of two amounts written as text; text that is not a
// number counts as zero.
func add(a, b string) string {
	x, _ := decimal.NewFromString(cmp.Or(a, "0"))
	y, _ := decimal.NewFromString(b)
	return x.Add(y).String()
}

// sort orders the rows by the Sort fields (ascending) and Tally fields
// (descending), the first named first; rows equal on them keep their
// order.
func (c *call) sort(rows []row, value func(row, Param) string) {
	slices.SortStableFunc(rows, func(a, b row) int {
		for _, g := range c.Gets {
			switch strings.ToLower(g.Op) {
			case "sort":
				if n := order(value(a, g), value(b, g)); n != 0 {
					return n
				}
			case "tally":
				if n := order(value(b, g), value(a, g)); n != 0 {
					return n
				}
			}
		}
		return 0
	})
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
// Two numbers compare as numbers, anything else as text; an empty field
// (a transaction that moved no credits has no Delta) meets no ordering
// but ne.
func compare(op string) (func(a, b string) bool, error) {
	ordered := func(keep func(int) bool) func(a, b string) bool {
		return func(a, b string) bool { return keep(order(a, b)) }
	}
	numeric := func(keep func(int) bool) func(a, b string) bool {
		return func(a, b string) bool { return a != "" && keep(order(a, b)) }
	}
	switch strings.ToLower(op) {
	case "", "eq":
		return ordered(func(n int) bool { return n == 0 }), nil
	case "ne":
		return ordered(func(n int) bool { return n != 0 }), nil
	case "lt":
		return numeric(func(n int) bool { return n < 0 }), nil
	case "le":
		return numeric(func(n int) bool { return n <= 0 }), nil
	case "gt":
		return numeric(func(n int) bool { return n > 0 }), nil
	case "ge":
		return numeric(func(n int) bool { return n >= 0 }), nil
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
