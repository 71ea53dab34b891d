package gold

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// A request's values come from its Data record, named as its object
// (<Job> for Job), or from its options: Gold's clients put some in one
// and some in the other (Maui the wallclock limit in an option). A name
// given in both must have one value. Only the names an action reads are
// accepted, so that nothing a client sends is silently ignored.

// checkNames refuses a Data record other than one named as the object,
// and a field or option that the action does not read.
func (c *call) checkNames(names ...string) error {
	if len(c.Data) > 1 || len(c.Data) == 1 && c.Data[0].Name != c.Object {
		return Errorf(CodeBadData, "%s %s takes one data record <%s>", c.Object, c.Action, c.Object)
	}
	given := slices.Clone(c.Options)
	if len(c.Data) == 1 {
		for _, f := range c.Data[0].Children {
			given = append(given, Param{Name: f.Name})
		}
	}
	for _, p := range given {
		if !slices.Contains(names, p.Name) {
			return Errorf(CodeBadData, "%s %s does not read %s; it reads %s", c.Object, c.Action, p.Name, strings.Join(names, ", "))
		}
	}
	for _, list := range [][]Param{c.Gets, c.Sets, c.Wheres} {
		if len(list) > 0 {
			return Errorf(CodeNotImplemented, "%s %s with Get, Set or Where elements is not implemented", c.Object, c.Action)
		}
	}
	return nil
}

// value is the value given for name, and whether one is.
func (c *call) value(name string) (string, bool, error) {
	v, inOption := c.Option(name)
	if len(c.Data) == 1 {
		if f, inData := c.Data[0].Field(name); inData {
			if inOption && f != v {
				return "", false, Errorf(CodeBadData, "%s is given twice, as %s and %s", name, ledger.Excerpt(f), ledger.Excerpt(v))
			}
			return f, true, nil
		}
	}
	return v, inOption, nil
}

// text is the value of name, "" when not given.
func (c *call) text(name string) (string, error) {
	v, _, err := c.value(name)
	return v, err
}

// need is the value of name, which must be given.
func (c *call) need(name string) (string, error) {
	v, ok, err := c.value(name)
	if err == nil && (!ok || v == "") {
		err = Errorf(CodeBadData, "%s %s needs %s", c.Object, c.Action, name)
	}
	return v, err
}

// firstOf is the value of the first of names given: aliases of one thing,
// of which a request may give one.
func (c *call) firstOf(names ...string) (string, error) {
	found := ""
	for _, n := range names {
		v, ok, err := c.value(n)
		if err != nil {
			return "", err
		}
		if ok && v != "" {
			if found != "" {
				return "", Errorf(CodeBadData, "give one of %s, not several", strings.Join(names, ", "))
			}
			found = v
		}
	}
	return found, nil
}

// count is a whole number of name (processors, seconds...), 0 when not
// given.
func (c *call) count(name string) (int64, error) {
	v, ok, err := c.value(name)
	if err != nil || !ok || v == "" {
		return 0, err
	}
	return wholeNumber(name, v)
}

// wholeNumber reads v, the value of name, as a whole number.
func wholeNumber(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || v == "" || v[0] == '+' {
		return 0, Errorf(CodeBadData, "%s %s is not a whole number", name, ledger.Excerpt(v))
	}
	return n, nil
}

// number is the id given as name (an allocation, a quote), 0 when none is.
func (c *call) number(name string) (uint64, error) {
	n, err := c.count(name)
	return uint64(n), err
}

// Gold's times in elements named ...Time are epoch seconds; an allocation
// without an end has Gold's "infinity", written as 2^31-1 or more, and one
// from the beginning of time its "-infinity", zero or less.
const infinity = math.MaxInt32

// when is the time of name: the zero time when not given, or at Gold's
// infinities.
func (c *call) when(name string) (time.Time, error) {
	v, ok, err := c.value(name)
	if err != nil || !ok || v == "" {
		return time.Time{}, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, Errorf(CodeBadData, "%s %s is not a time in epoch seconds", name, ledger.Excerpt(v))
	}
	if n <= 0 || n >= infinity {
		return time.Time{}, nil
	}
	return time.Unix(n, 0).UTC(), nil
}

// epoch writes a time as Gold does; no time is Gold's infinity.
func epoch(t time.Time) string {
	if t.IsZero() {
		return strconv.Itoa(infinity)
	}
	return strconv.FormatInt(t.Unix(), 10)
}

// maxPlaces is the most decimal places a bank may have: an amount with
// more is refused here, one within it by the bank at its own precision.
const maxPlaces = 8

// amount is the amount of name; zero when not given, and refused when
// given as zero unless zeroOK.
func (c *call) amount(name string, zeroOK bool) (decimal.Decimal, error) {
	v, ok, err := c.value(name)
	if err != nil || !ok || v == "" {
		return decimal.Zero, err
	}
	parse := ledger.ParseAmount
	if zeroOK {
		parse = ledger.ParseCreditLimit
	}
	d, err := parse(v, maxPlaces)
	if err != nil {
		return decimal.Zero, Errorf(CodeBadData, "%s: %v", name, err)
	}
	return d, nil
}

// flag is a True or False option (any case); false when not given.
func (c *call) flag(name string) (bool, error) {
	v, ok, err := c.value(name)
	if err != nil || !ok {
		return false, err
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, Errorf(CodeBadData, "%s %s is not True or False", name, ledger.Excerpt(v))
}

// machine is the machine a job runs on: MachineName, else the one machine
// the client schedules, else the bank's one machine.
func (c *call) machine() (string, error) {
	if m, err := c.text("MachineName"); err != nil || m != "" {
		return m, err
	}
	if c.client.Role == clients.RoleScheduler && len(c.client.Scope) == 1 {
		return c.client.Scope[0], nil
	}
	ms, err := read[api.List[ledger.Machine]](c, http.MethodGet, api.PathMachines, api.NoQuery{})
	if err != nil {
		return "", err
	}
	if len(ms.Items) != 1 {
		return "", Errorf(CodeBadData, "%s %s needs MachineName: the bank has %d machines", c.Object, c.Action, len(ms.Items))
	}
	return ms.Items[0].Name, nil
}

// field is a row's or a reply's field.
func field(name, text string) Element { return Element{Name: name, Text: text} }

// record is a reply's record of fields.
func record(name string, fields ...Element) Element { return Element{Name: name, Children: fields} }

// idText writes an id.
func idText(id uint64) string { return strconv.FormatUint(id, 10) }
