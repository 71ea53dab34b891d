package gold

import (
	"bufio"
	"bytes"
	"errors"
	"maps"
	"strconv"
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
		"<Envelope><Body/></Envelope>", `<!DOCTYPE x><x/>`, "<Envelope><Body><Request/></Body></Envelope>", goldBalanceJoin,
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

// goldBalanceJoin is the join gbalance sends for what reservations hold.
const goldBalanceJoin = `<Envelope><Body><Request action="Query" actor="root"><Object>Reservation</Object><Object>ReservationAllocation</Object>` +
	`<Get object="ReservationAllocation" name="Account" op="GroupBy"></Get><Get object="ReservationAllocation" name="Amount" op="Sum"></Get>` +
	`<Where object="Reservation" name="Id" subject="ReservationAllocation">Reservation</Where><Where object="Reservation" name="EndTime" op="GT">1</Where></Request></Body></Envelope>`

// FuzzQuery: whatever Gets (with Sort, Tally, GroupBy and aggregates,
// aliases), Wheres and join a request has, a query of fixed rows is
// refused with an *Error or answers at most the rows it was given, each
// with one field for each Get, and its Count is the number answered.
func FuzzQuery(f *testing.F) {
	for _, seed := range []string{
		goldBalanceJoin,
		envelope(`<Body><Request action="Query" actor="root"><Object>Transaction</Object><Get name="Object" op="GroupBy"/><Get name="Delta" op="Sum" alias="Amount"/><Get name="Id" op="Count" alias="Count"/><Where name="Delta" op="LE">0</Where></Request></Body>`),
		envelope(`<Body><Request action="Query" actor="root"><Object>Transaction</Object><Get name="Id" op="Sort"/><Get name="Id"/><Get name="Delta" op="Tally"/><Where name="Object" op="Match">J%</Where></Request></Body>`),
	} {
		f.Add([]byte(seed))
	}
	fields := []string{"Id", "Object", "Delta", "Account", "Amount", "Reservation", "EndTime"}
	rows := []row{{"Id": "1", "Object": "Job", "Delta": "-5", "Account": "a"}, {"Id": "2", "Object": "Account", "Delta": "7.5", "Account": "b"},
		{"Id": "10", "Object": "Job", "Delta": "", "Account": "a", "Amount": "x"}}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := ParseMessage(payload)
		if err != nil {
			return
		}
		r, err := m.Request()
		if err != nil {
			return
		}
		c := &call{Request: r, numbers: map[string]uint64{"a": 1, "b": 2}}
		if err := c.checkQuery(fields); err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("query error %v is not an *Error", err)
			}
			return
		}
		resp, err := c.rows(fields, cloneRows(rows))
		if err != nil {
			t.Fatalf("rows: %v", err)
		}
		if len(resp.Data) > len(rows) || resp.Count != strconv.Itoa(len(resp.Data)) {
			t.Fatalf("%d rows, count %s, of %d", len(resp.Data), resp.Count, len(rows))
		}
		for _, e := range resp.Data {
			if len(r.Gets) > 0 && len(e.Children) != len(r.Gets) {
				t.Fatalf("row %+v for %d Gets", e, len(r.Gets))
			}
		}
	})
}

func cloneRows(rows []row) []row {
	out := make([]row, len(rows))
	for i, r := range rows {
		out[i] = maps.Clone(r)
	}
	return out
}
