package gold

import (
	"reflect"
	"strings"
	"testing"
)

// TestRequest decodes the specification's example, as Gold's client and
// as Maui write it.
func TestRequest(t *testing.T) {
	want := Request{Action: "Reserve", Actor: "slurm", Object: "Job",
		Options: []Param{{Name: "WallDuration", Value: "3600"}},
		Data: []Element{{Name: "Job", Children: []Element{
			{Name: "JobId", Text: "4242"}, {Name: "MachineName", Text: "frontier"}, {Name: "Processors", Text: "64"},
			{Name: "ProjectId", Text: "chem"}, {Name: "UserId", Text: "ana"}}}}}
	for name, payload := range map[string]string{"gold": specXML, "maui": mauiXML} {
		m, err := ParseMessage([]byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.Request()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("%s: request %+v; want %+v", name, r, want)
		}
	}
}

// TestMalformedMessages: each mistake gets its code and a message saying
// what is wrong, whether the envelope (ParseMessage) or the request
// (Request) has it.
func TestMalformedMessages(t *testing.T) {
	req := func(inner string) string {
		return envelope(`<Body><Request action="Query" actor="amy">` + inner + `</Request></Body>`)
	}
	cases := []struct {
		name, payload string
		code          Code
		says          string
	}{
		{"not XML", "<Envelope><Body>", CodeMalformed, "not well-formed"},
		{"not an envelope", "<Request/>", CodeMalformed, "not <Envelope>"},
		{"text", "<Envelope>hello<Body/></Envelope>", CodeMalformed, "holds text"},
		{"two roots", "<Envelope><Body/></Envelope><Envelope/>", CodeMalformed, "second root"},
		{"doctype", `<!DOCTYPE Envelope [<!ENTITY x "y">]><Envelope><Body/></Envelope>`, CodeMalformed, "DOCTYPE"},
		{"unknown entity", "<Envelope><Body>&x;</Body></Envelope>", CodeMalformed, "not well-formed"},
		{"latin-1", `<?xml version="1.0" encoding="ISO-8859-1"?><Envelope><Body/></Envelope>`, CodeMalformed, "not well-formed"},
		{"invalid UTF-8", "<Envelope><Body>\xff</Body></Envelope>", CodeMalformed, "not well-formed"},
		{"control character", "<Envelope><Body>\x01</Body></Envelope>", CodeMalformed, "not well-formed"},
		{"namespace", `<Envelope xmlns="urn:x"><Body/></Envelope>`, CodeMalformed, "namespace"},
		{"prefixed", `<soap:Envelope><Body/></soap:Envelope>`, CodeMalformed, "namespace"},
		{"attribute twice", `<Envelope a="1" a="2"><Body/></Envelope>`, CodeMalformed, "attribute a twice"},
		{"no body", "<Envelope><Signature/></Envelope>", CodeMalformed, "no <Body>"},
		{"two bodies", "<Envelope><Body/><Body/></Envelope>", CodeMalformed, "two <Body>"},
		{"other element", "<Envelope><Body/><Header/></Envelope>", CodeMalformed, "<Header>"},
		{"encrypted", "<Envelope><EncryptedData/></Envelope>", CodeNotImplemented, "encrypted"},
		{"deep", "<Envelope><Body>" + strings.Repeat("<a>", maxDepth) + strings.Repeat("</a>", maxDepth) + "</Body></Envelope>", CodeMalformed, "nest"},
		{"many", "<Envelope><Body>" + strings.Repeat("<a/>", maxElements) + "</Body></Envelope>", CodeMalformed, "more than 10000"},
		{"bad digest", "<Envelope><Body/><Signature><DigestValue>abc</DigestValue><SignatureValue>abc</SignatureValue></Signature></Envelope>", CodeSigning, "not 20 bytes"},
		{"public key", `<Envelope><Body/><Signature><SecurityToken type="Asymmetric"/></Signature></Envelope>`, CodeSigning, "Symmetric"},
		{"no request", envelope("<Body></Body>"), CodeMalformed, "one <Request>"},
		{"no action", envelope(`<Body><Request actor="amy"><Object>Job</Object></Request></Body>`), CodeBadAction, "no action"},
		{"no actor", envelope(`<Body><Request action="Query"><Object>Job</Object></Request></Body>`), CodeBadActor, "no actor"},
		{"actor with a space", envelope(`<Body><Request action="Query" actor="a b"><Object>Job</Object></Request></Body>`), CodeBadActor, "without spaces"},
		{"no object", req(""), CodeBadObject, "no <Object>"},
		{"empty object", req("<Object></Object>"), CodeBadObject, "not a name"},
		{"two objects", req("<Object>Job</Object><Object>User</Object>"), CodeNotImplemented, "the one join is Reservation Query joined to ReservationAllocation"},
		{"three objects", req("<Object>Reservation</Object><Object>ReservationAllocation</Object><Object>User</Object>"), CodeNotImplemented, "more than two objects"},
		{"join without its condition", req("<Object>Reservation</Object><Object>ReservationAllocation</Object>"), CodeNotImplemented, "needs its condition"},
		{"join on another field", req(`<Object>Reservation</Object><Object>ReservationAllocation</Object><Where object="Reservation" name="Name" subject="ReservationAllocation">Reservation</Where>`), CodeNotImplemented, "not on Reservation.Name"},
		{"alias of a where", req(`<Object>Job</Object><Where name="Id" alias="x">1</Where>`), CodeMalformed, "only a <Get>"},
		{"join", req(`<Object join="Inner">Job</Object>`), CodeNotImplemented, "joins"},
		{"get of another object", req(`<Object>Job</Object><Get name="Id" object="User"/>`), CodeNotImplemented, "across objects"},
		{"unknown attribute", req(`<Object>Job</Object><Where name="Id" colour="red">1</Where>`), CodeMalformed, "colour"},
		{"nameless option", req(`<Object>Job</Object><Option>1</Option>`), CodeBadData, "needs a name"},
		{"option twice", req(`<Object>Job</Object><Option name="A">1</Option><Option name="A">2</Option>`), CodeBadData, "given twice"},
		{"field twice", req(`<Object>Job</Object><Data><Job><JobId>1</JobId><JobId>2</JobId></Job></Data>`), CodeBadData, "JobId twice"},
		{"nested field", req(`<Object>Job</Object><Data><Job><JobId><x/></JobId></Job></Data>`), CodeBadData, "holds elements"},
		{"two data", req(`<Object>Job</Object><Data/><Data/>`), CodeMalformed, "two <Data>"},
		{"unknown element", req(`<Object>Job</Object><Chunk/>`), CodeMalformed, "<Chunk>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseMessage([]byte(c.payload))
			if err == nil {
				_, err = m.Request()
			}
			if !hasCode(err, c.code) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %v; want code %s saying %q", err, c.code, c.says)
			}
		})
	}
}

// TestResponseEncoding: the specification's reply, byte for byte; a
// signed reply verifies with the key; text is escaped.
func TestResponseEncoding(t *testing.T) {
	r := Response{Actor: "slurm", Code: CodeSuccess, Message: "Successfully reserved 230400 credits for job 4242", Count: "230400",
		Data: []Element{{Name: "Job", Children: []Element{{Name: "Id", Text: "17"},
			{Name: "Reservation", Children: []Element{{Name: "Id", Text: "9"}, {Name: "Amount", Text: "230400"}}}}}}}
	want := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Envelope><Body><Response actor="slurm"><Status><Value>Success</Value><Code>000</Code><Message>Successfully reserved 230400 credits for job 4242</Message></Status><Count>230400</Count><Data><Job><Id>17</Id><Reservation><Id>9</Id><Amount>230400</Amount></Reservation></Job></Data></Response></Body></Envelope>`
	if got := string(r.Encode(nil)); got != want {
		t.Errorf("reply\n%s\nwant\n%s", got, want)
	}
	signed, err := ParseMessage(r.Encode([]byte(specKey)))
	if err != nil {
		t.Fatal(err)
	}
	if signed.CheckDigest() != nil || !signed.SignedWith([]byte(specKey)) {
		t.Error("a signed reply does not verify")
	}
	f := Failure("a<b", Errorf(CodeFunds, "Insufficient balance to reserve job (JobId 4242) & more"))
	if got := string(f.Encode(nil)); !strings.Contains(got, `<Response actor="a&lt;b"><Status><Value>Failure</Value><Code>782</Code><Message>Insufficient balance to reserve job (JobId 4242) &amp; more</Message>`) {
		t.Errorf("failure %s", got)
	}
	if w := (Response{Code: CodeSuccess, Warning: true}); w.Status() != "Warning" {
		t.Errorf("warning's status %s", w.Status())
	}
}
