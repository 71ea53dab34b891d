package gold

import (
	"bytes"
	"encoding/xml"
	"errors"
)

// Response is a reply's content: its status, a count, and data records.
type Response struct {
	// Actor is the request's actor, echoed.
	Actor   string
	Code    Code
	Message string
	// Warning makes a success's status Warning: it was done, and the
	// message says what the client should know (an overdraft, say).
	Warning bool
	// Count is the amount for a reservation, charge or quote, else the
	// number of rows in Data.
	Count string
	Data  []Element
}

// Failure is the response to a request that failed with err: an *Error's
// code and message, else 900 (the caller logs err).
func Failure(actor string, err error) Response {
	if e, ok := errors.AsType[*Error](err); ok {
		return Response{Actor: actor, Code: e.Code, Message: e.Message}
	}
	return Response{Actor: actor, Code: CodeInternal, Message: "internal error (the server's log has the cause)"}
}

// Status is the response's Value: Success, Warning or Failure. Maui takes
// anything but a present value other than Failure for a failure.
func (r Response) Status() string {
	switch {
	case r.Code != CodeSuccess:
		return "Failure"
	case r.Warning:
		return "Warning"
	}
	return "Success"
}

// Encode is the reply's payload: the XML declaration and an Envelope with
// the Body, signed with key unless key is nil (an unauthenticated request
// gets an unsigned reply). Gold's clients check a reply's signature when
// it has one, so a reply is signed with the key that signed the request.
func (r Response) Encode(key []byte) []byte {
	var body bytes.Buffer
	body.WriteString("<Body><Response")
	if r.Actor != "" {
		body.WriteString(` actor="`)
		xml.EscapeText(&body, []byte(r.Actor))
		body.WriteString(`"`)
	}
	body.WriteString("><Status>")
	text(&body, "Value", r.Status())
	text(&body, "Code", string(r.Code))
	text(&body, "Message", r.Message)
	body.WriteString("</Status>")
	if r.Count != "" {
		text(&body, "Count", r.Count)
	}
	if len(r.Data) > 0 {
		body.WriteString("<Data>")
		for _, e := range r.Data {
			writeElement(&body, e)
		}
		body.WriteString("</Data>")
	}
	body.WriteString("</Response></Body>")
	var out bytes.Buffer
	out.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<Envelope>")
	out.Write(body.Bytes())
	if key != nil {
		digest, signature := Sign(key, body.Bytes())
		out.WriteString("<Signature>")
		text(&out, "DigestValue", digest)
		text(&out, "SignatureValue", signature)
		out.WriteString(`<SecurityToken type="Symmetric"></SecurityToken></Signature>`)
	}
	out.WriteString("</Envelope>")
	return out.Bytes()
}

func text(b *bytes.Buffer, name, value string) {
	b.WriteString("<" + name + ">")
	xml.EscapeText(b, []byte(value))
	b.WriteString("</" + name + ">")
}

func writeElement(b *bytes.Buffer, e Element) {
	if len(e.Children) == 0 {
		text(b, e.Name, e.Text)
		return
	}
	b.WriteString("<" + e.Name + ">")
	for _, c := range e.Children {
		writeElement(b, c)
	}
	b.WriteString("</" + e.Name + ">")
}
