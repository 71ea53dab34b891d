package gold

import (
	"encoding/base64"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
)

// Message is a request as received: the Body element's bytes exactly as
// they came (what the signature covers) and the Signature's values. Its
// request is decoded by Request, after the signature is checked.
type Message struct {
	// Body is the payload from "<Body" to the end of "</Body>".
	Body []byte
	// Signed says the envelope has a Signature; Digest and Signature are
	// its DigestValue and SignatureValue, decoded.
	Signed            bool
	Digest, Signature []byte
	body              *node
}

// ParseMessage reads a payload's envelope: an Envelope holding one Body
// and at most one Signature, in either order (Maui writes the Signature
// first). Attributes of the Envelope and the Body are ignored (Maui adds
// its own), and so is a missing XML declaration. Errors are *Error: 242
// for what is not such an envelope, 422 for a Signature that cannot be
// checked, 315 for an encrypted one.
func ParseMessage(payload []byte) (*Message, error) {
	root, err := parseTree(payload)
	if err != nil {
		return nil, err
	}
	if root.name != "Envelope" {
		return nil, Errorf(CodeMalformed, "the root element is <%s>, not <Envelope>", root.name)
	}
	if err := noText(root); err != nil {
		return nil, err
	}
	m := &Message{}
	var signature *node
	for _, c := range root.children {
		switch c.name {
		case "Body":
			if m.body != nil {
				return nil, Errorf(CodeMalformed, "the envelope has two <Body> elements")
			}
			m.body, m.Body = c, payload[c.start:c.end]
		case "Signature":
			if signature != nil {
				return nil, Errorf(CodeMalformed, "the envelope has two <Signature> elements")
			}
			signature = c
		case "EncryptedData":
			return nil, Errorf(CodeNotImplemented, "encrypted messages are not implemented: send the Body in clear, signed")
		default:
			return nil, Errorf(CodeMalformed, "the envelope has an element <%s>; it holds <Body> and <Signature>", c.name)
		}
	}
	if m.body == nil {
		return nil, Errorf(CodeMalformed, "the envelope has no <Body>")
	}
	if signature != nil {
		if err := m.readSignature(signature); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// readSignature reads DigestValue, SignatureValue and SecurityToken. A
// token of another type than Symmetric (Gold's public keys) is refused;
// a missing one means Symmetric.
func (m *Message) readSignature(s *node) error {
	if err := noText(s); err != nil {
		return err
	}
	var digest, signature, token *node
	for _, c := range s.children {
		var slot **node
		switch c.name {
		case "DigestValue":
			slot = &digest
		case "SignatureValue":
			slot = &signature
		case "SecurityToken":
			slot = &token
		default:
			return Errorf(CodeMalformed, "the signature has an element <%s>", c.name)
		}
		if *slot != nil {
			return Errorf(CodeMalformed, "the signature has two <%s> elements", c.name)
		}
		if len(c.children) > 0 {
			return Errorf(CodeMalformed, "<%s> holds elements; it holds text", c.name)
		}
		*slot = c
	}
	if token != nil {
		if kind, ok := token.attr("type"); ok && kind != "Symmetric" {
			return Errorf(CodeSigning, "security token type %s: only Symmetric (a shared key) is implemented", ledger.Excerpt(kind))
		}
	}
	if digest == nil || signature == nil {
		return Errorf(CodeSigning, "the signature needs a <DigestValue> and a <SignatureValue>")
	}
	var err error
	if m.Digest, err = decode20(digest); err != nil {
		return err
	}
	if m.Signature, err = decode20(signature); err != nil {
		return err
	}
	m.Signed = true
	return nil
}

// decode20 decodes a value of 20 bytes (a SHA-1 digest or HMAC) in
// standard base64; white space within is ignored, as Perl's base64
// encoder may end its lines anywhere.
func decode20(n *node) ([]byte, error) {
	text := strings.Join(strings.Fields(n.text.String()), "")
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(b) != 20 {
		return nil, Errorf(CodeSigning, "<%s> is not 20 bytes in base64: %s", n.name, ledger.Excerpt(text))
	}
	return b, nil
}

// noText refuses text other than white space directly inside an element
// that holds elements.
func noText(n *node) error {
	if strings.TrimSpace(n.text.String()) != "" {
		return Errorf(CodeMalformed, "<%s> holds text; it holds elements", n.name)
	}
	return nil
}
