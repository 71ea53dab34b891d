package gold

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
)

// Bounds of a message's XML beyond the payload's size: how deep elements
// nest (a request's field is six deep) and how many there are.
const (
	maxDepth    = 10
	maxElements = 10000
)

// node is an element of a message as parsed, with where it lies in the
// payload: the signature covers the Body element's bytes as received, not
// any re-encoding of them.
type node struct {
	name     string
	attrs    []xml.Attr
	text     strings.Builder // character data directly inside
	children []*node
	// start is the offset of its "<", end that just past its end tag.
	start, end int64
}

// attr is the value of an attribute, and whether it is there.
func (n *node) attr(name string) (string, bool) {
	for _, a := range n.attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// parseTree parses a payload into its root element, strictly: one root,
// UTF-8, no namespaces, no DOCTYPE or other declarations (so no entities
// but XML's five), no attribute twice, within maxDepth and maxElements.
// Comments are skipped. Errors are *Error (code 242).
func parseTree(payload []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(payload))
	var root *node
	var open []*node
	elements := 0
	for {
		offset := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, Errorf(CodeMalformed, "the message is not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(open) == 0 {
				return nil, Errorf(CodeMalformed, "the message has a second root element <%s>", t.Name.Local)
			}
			if err := checkElement(t); err != nil {
				return nil, err
			}
			if elements++; elements > maxElements {
				return nil, Errorf(CodeMalformed, "the message has more than %d elements", maxElements)
			}
			if len(open) == maxDepth {
				return nil, Errorf(CodeMalformed, "elements nest more than %d deep", maxDepth)
			}
			n := &node{name: t.Name.Local, attrs: t.Attr, start: offset}
			if len(open) == 0 {
				root = n
			} else {
				parent := open[len(open)-1]
				parent.children = append(parent.children, n)
			}
			open = append(open, n)
		case xml.EndElement:
			n := open[len(open)-1]
			n.end = d.InputOffset()
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				open[len(open)-1].text.Write(t)
			} else if len(bytes.TrimSpace(t)) > 0 {
				return nil, Errorf(CodeMalformed, "the message has text outside its root element")
			}
		case xml.ProcInst:
			if t.Target != "xml" || root != nil {
				return nil, Errorf(CodeMalformed, "the message has a processing instruction <?%s?>", t.Target)
			}
		case xml.Directive:
			return nil, Errorf(CodeMalformed, "the message has a declaration <!%s>: DOCTYPE and entities are not accepted", ledger.Excerpt(string(t)))
		}
	}
	if root == nil {
		return nil, Errorf(CodeMalformed, "the message has no XML element")
	}
	return root, nil
}

// checkElement refuses namespaces and repeated attributes: SSSRMAP uses
// neither, and a repeated attribute is two values for one thing.
func checkElement(t xml.StartElement) error {
	if t.Name.Space != "" {
		return Errorf(CodeMalformed, "element <%s> is in a namespace (%s): SSSRMAP elements have none", t.Name.Local, t.Name.Space)
	}
	for i, a := range t.Attr {
		if a.Name.Space != "" || a.Name.Local == "xmlns" {
			return Errorf(CodeMalformed, "element <%s> declares a namespace: SSSRMAP elements have none", t.Name.Local)
		}
		for _, b := range t.Attr[:i] {
			if b.Name.Local == a.Name.Local {
				return Errorf(CodeMalformed, "element <%s> has attribute %s twice", t.Name.Local, a.Name.Local)
			}
		}
	}
	return nil
}
