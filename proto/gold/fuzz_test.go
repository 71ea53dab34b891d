package gold

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// FuzzReadPayload: whatever a client sends, ReadPayload returns a payload
// within the limit or a 242, and never panics.
func FuzzReadPayload(f *testing.F) {
	for _, seed := range []string{
		goldFrame(specXML), mauiFrame(mauiXML), "POST /gold HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc",
		"POST /SSSRMAP3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n", "POST /SSSRMAP3 HTTP/1.1\n\n", "",
	} {
		f.Add([]byte(seed))
	}
	const limit = 1 << 12
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ReadPayload(bufio.NewReaderSize(bytes.NewReader(raw), maxHeaderLine), limit)
		if err != nil {
			if !hasCode(err, CodeMalformed) {
				t.Fatalf("error %v is not a 242", err)
			}
			return
		}
		if len(p) > limit || !bytes.Contains(raw, p) || bytes.HasSuffix(p, []byte{0}) {
			t.Fatalf("payload %q of %q", p, raw)
		}
	})
}

// FuzzParseMessage: whatever the payload, the envelope and the request
// decode or fail with an *Error; what decodes has its Body as it lies in
// the payload, and a reply echoing it encodes into a message that parses
// and verifies.
func FuzzParseMessage(f *testing.F) {
	for _, seed := range []string{
		specXML, mauiXML, envelope(`<Body><Request action="Query" actor="amy"><Object>Account</Object><Get name="Id"/><Where name="Name" op="Match">c%</Where></Request></Body>`),
		"<Envelope><Body/></Envelope>", `<!DOCTYPE x><x/>`, "<Envelope><Body><Request/></Body></Envelope>",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := ParseMessage(payload)
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if !bytes.HasPrefix(m.Body, []byte("<Body")) || !bytes.Contains(payload, m.Body) {
			t.Fatalf("Body %q of %q", m.Body, payload)
		}
		_ = m.CheckDigest()
		r, err := m.Request()
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("request error %v is not an *Error", err)
			}
			return
		}
		if !isName(r.Action) || !isName(r.Actor) || !isName(r.Object) {
			t.Fatalf("request %+v", r)
		}
		reply := Response{Actor: r.Actor, Code: CodeSuccess, Message: r.Action, Data: r.Data}
		back, err := ParseMessage(reply.Encode([]byte(specKey)))
		if err != nil || back.CheckDigest() != nil || !back.SignedWith([]byte(specKey)) {
			t.Fatalf("reply to %+v does not verify: %v", r, err)
		}
	})
}
