package gold

import (
	"slices"
	"strings"
	"unicode"

	"github.com/ingot-hpc/ingot/ledger"
)

// Request is an SSSRMAP request: an action on an object by an actor, with
// its selections (Get), assignments (Set), conditions (Where), options and
// data records.
type Request struct {
	Action string
	// Actor is who the client says asks: Gold's clients put the user
	// running the command; Maui its own user. The bank records it; the
	// key, not the actor, says what may be done.
	Actor  string
	Object string
	// Joined is a second object the request joins to Object; the one
	// join Gold's clients send is gbalance's Reservation with
	// ReservationAllocation (joinObject).
	Joined  string
	Gets    []Param
	Sets    []Param
	Wheres  []Param
	Options []Param
	// Data are the records of <Data>, such as <Job>, each holding fields
	// such as <JobId>4242</JobId>.
	Data []Element
}

// Param is a Get, Set, Where or Option: a name, for Get an aggregate op,
// for the others the value (text, trimmed of white space) and how it is
// compared (op) and combined (conj, group).
type Param struct {
	Name, Op, Conj, Group, Value string
	// Object is the object of a joined request the field is of, and
	// Subject, in a Where, the object whose field Value names.
	Object, Subject string
	// Alias, in a Get, names the field in the rows answered.
	Alias string
}

// Element is an element of Data: a record (<Job>) whose Children are its
// fields, or a field whose Text is its value.
type Element struct {
	Name     string
	Text     string
	Children []Element
}

// Field is the text of a record's field, and whether it is there.
func (e Element) Field(name string) (string, bool) {
	for _, c := range e.Children {
		if c.Name == name {
			return c.Text, true
		}
	}
	return "", false
}

// Option is the value of an option, and whether it is there.
func (r Request) Option(name string) (string, bool) {
	for _, p := range r.Options {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// maxName bounds an action, an actor, an object and a field's name.
const maxName = 64

// Request decodes the message's request: the Body's one <Request>, with
// the attributes action and actor (Gold's chunking and chunkSize are
// ignored: a reply is always one chunk) and, in any order, one <Object>,
// any <Get>, <Set>, <Where> and <Option>, each with a name, and at most
// one <Data>. Errors are *Error: 311, 312 and 313 for a missing object,
// action or actor, 314 for a bad or repeated field or option, 315 for
// what SSSRMAP allows and the bank does not do (several objects, queries
// across objects), 242 for anything else.
func (m *Message) Request() (Request, error) {
	body := m.body
	if err := noText(body); err != nil {
		return Request{}, err
	}
	if len(body.children) != 1 || body.children[0].name != "Request" {
		return Request{}, Errorf(CodeMalformed, "the <Body> must hold one <Request>")
	}
	n := body.children[0]
	if err := noText(n); err != nil {
		return Request{}, err
	}
	var r Request
	var err error
	if r.Action, err = nameAttr(n, "action", CodeBadAction); err != nil {
		return Request{}, err
	}
	if r.Actor, err = nameAttr(n, "actor", CodeBadActor); err != nil {
		return Request{}, err
	}
	for _, c := range n.children {
		if err := r.add(c); err != nil {
			return Request{}, err
		}
	}
	if r.Object == "" {
		return Request{}, Errorf(CodeBadObject, "the request names no <Object>")
	}
	for _, list := range [][]Param{r.Options, r.Sets} {
		if err := noRepeats(list); err != nil {
			return Request{}, err
		}
	}
	if err := r.checkJoin(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// add adds one child of <Request>.
func (r *Request) add(c *node) error {
	switch c.name {
	case "Object":
		if r.Joined != "" {
			return Errorf(CodeNotImplemented, "requests on more than two objects are not implemented")
		}
		if len(c.attrs) > 0 || len(c.children) > 0 {
			return Errorf(CodeNotImplemented, "<Object> with attributes or elements (aliases and joins) is not implemented")
		}
		name := strings.TrimSpace(c.text.String())
		if !isName(name) {
			return Errorf(CodeBadObject, "object %s is not a name", ledger.Excerpt(name))
		}
		if r.Object == "" {
			r.Object = name
		} else {
			r.Joined = name
		}
	case "Get", "Set", "Where", "Option":
		p, err := param(c)
		if err != nil {
			return err
		}
		list := map[string]*[]Param{"Get": &r.Gets, "Set": &r.Sets, "Where": &r.Wheres, "Option": &r.Options}[c.name]
		*list = append(*list, p)
	case "Data":
		if r.Data != nil {
			return Errorf(CodeMalformed, "the request has two <Data> elements")
		}
		data, err := records(c)
		if err != nil {
			return err
		}
		r.Data = data
	default:
		return Errorf(CodeMalformed, "the request has an element <%s>", c.name)
	}
	return nil
}

// nameAttr is a required attribute that must be a name.
func nameAttr(n *node, name string, code Code) (string, error) {
	v, _ := n.attr(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return "", Errorf(code, "the request has no %s", name)
	}
	if !isName(v) {
		return "", Errorf(code, "%s %s is not 1 to %d printable characters without spaces", name, ledger.Excerpt(v), maxName)
	}
	return v, nil
}

// isName accepts 1 to maxName printable characters without spaces.
func isName(s string) bool {
	return s != "" && len(s) <= maxName && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) < 0
}

// param reads a Get, Set, Where or Option. The attributes of queries
// across objects (object, subject, alias) are refused, not ignored: a
// condition ignored would select other rows than the client asked for.
func param(c *node) (Param, error) {
	if len(c.children) > 0 {
		return Param{}, Errorf(CodeMalformed, "<%s> holds elements; it holds text", c.name)
	}
	p := Param{Value: strings.TrimSpace(c.text.String())}
	for _, a := range c.attrs {
		switch a.Name.Local {
		case "name":
			p.Name = a.Value
		case "op":
			p.Op = a.Value
		case "conj":
			p.Conj = a.Value
		case "group":
			p.Group = a.Value
		case "object":
			p.Object = a.Value
		case "subject":
			p.Subject = a.Value
		case "alias":
			if c.name != "Get" {
				return Param{}, Errorf(CodeMalformed, "<%s> has an attribute alias; only a <Get> has one", c.name)
			}
			p.Alias = a.Value
		default:
			return Param{}, Errorf(CodeMalformed, "<%s> has an attribute %s", c.name, a.Name.Local)
		}
	}
	if !isName(p.Name) {
		return Param{}, Errorf(CodeBadData, "<%s> needs a name (1 to %d printable characters without spaces), not %s", c.name, maxName, ledger.Excerpt(p.Name))
	}
	return p, nil
}

// noRepeats refuses an option or assignment given twice: two values for
// one thing, of which the bank would have to pick one.
func noRepeats(list []Param) error {
	for i, p := range list {
		for _, q := range list[:i] {
			if q.Name == p.Name {
				return Errorf(CodeBadData, "%s is given twice", p.Name)
			}
		}
	}
	return nil
}

// records reads <Data>: records, each holding fields of text, no field
// twice in a record.
func records(data *node) ([]Element, error) {
	if err := noText(data); err != nil {
		return nil, err
	}
	out := make([]Element, 0, len(data.children))
	for _, rec := range data.children {
		if err := noText(rec); err != nil {
			return nil, err
		}
		if len(rec.attrs) > 0 {
			return nil, Errorf(CodeBadData, "data record <%s> has attributes", rec.name)
		}
		e := Element{Name: rec.name, Children: make([]Element, 0, len(rec.children))}
		for _, f := range rec.children {
			if len(f.children) > 0 || len(f.attrs) > 0 {
				return nil, Errorf(CodeBadData, "field <%s> of <%s> holds elements or attributes; a field holds text", f.name, rec.name)
			}
			if _, dup := e.Field(f.name); dup {
				return nil, Errorf(CodeBadData, "<%s> has field %s twice", rec.name, f.name)
			}
			e.Children = append(e.Children, Element{Name: f.name, Text: strings.TrimSpace(f.text.String())})
		}
		out = append(out, e)
	}
	return out, nil
}

// joinObject is the one join implemented: gbalance's sum of what the
// active reservations hold on each account, Reservation joined to
// ReservationAllocation on Reservation.Id = ReservationAllocation.Reservation.
// It is answered as the object ReservationAllocation, whose rows carry
// their reservation's StartTime and EndTime.
const joinObject = "ReservationAllocation"

// checkJoin refuses object and subject attributes outside that join, and
// any join but it; the join's condition, which every row meets, is
// dropped, and the fields lose their objects' names.
func (r *Request) checkJoin() error {
	params := slices.Concat(r.Gets, r.Wheres, r.Options, r.Sets)
	if r.Joined == "" {
		for _, p := range params {
			if p.Object != "" || p.Subject != "" {
				return Errorf(CodeNotImplemented, "%s %s with object= or subject=: queries across objects are not implemented", p.Name, ledger.Excerpt(p.Value))
			}
		}
		return nil
	}
	if r.Object != "Reservation" || r.Joined != joinObject || r.Action != "Query" {
		return Errorf(CodeNotImplemented, "%s %s joined to %s is not implemented; the one join is Reservation Query joined to %s", r.Object, r.Action, r.Joined, joinObject)
	}
	var wheres []Param
	joined := false
	for _, w := range r.Wheres {
		if w.Subject != "" {
			if w.Object != "Reservation" || w.Name != "Id" || w.Subject != joinObject || w.Value != "Reservation" || w.Op != "" && !strings.EqualFold(w.Op, "EQ") || joined {
				return Errorf(CodeNotImplemented, "the join of Reservation and %s is on Reservation.Id = %s.Reservation, not on %s.%s", joinObject, joinObject, w.Object, w.Name)
			}
			joined = true
			continue
		}
		wheres = append(wheres, w)
	}
	if !joined {
		return Errorf(CodeNotImplemented, "the join of Reservation and %s needs its condition Reservation.Id = %s.Reservation", joinObject, joinObject)
	}
	r.Wheres = wheres
	r.Object, r.Joined = joinObject, ""
	for _, list := range [][]Param{r.Gets, r.Wheres} {
		for i := range list {
			list[i].Object = ""
		}
	}
	return nil
}
