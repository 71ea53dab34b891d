package gold

import (
	"fmt"
	"strings"
)

// The specification's example request and its test vector.
const (
	specKey  = "s3cret-key-for-tests"
	specBody = `<Body><Request action="Reserve" actor="slurm"><Object>Job</Object><Option name="WallDuration">3600</Option><Data><Job><JobId>4242</JobId><MachineName>frontier</MachineName><Processors>64</Processors><ProjectId>chem</ProjectId><UserId>ana</UserId></Job></Data></Request></Body>`
	specSig  = `<Signature><DigestValue>fioVsm8/u5sml+JVBG8YVQDUZy4=</DigestValue><SignatureValue>oFeHwMturQL1uE1aef82nJLYeDc=</SignatureValue><SecurityToken type="Symmetric"></SecurityToken></Signature>`
	specXML  = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Envelope>` + specBody + specSig + `</Envelope>`
)

// mauiXML is the example as Maui writes it, signed with the spec's key:
// the Signature first, its own attributes on the Envelope and an actor on
// the Body, no declaration, no token.
var mauiXML = func() string {
	body := strings.Replace(specBody, "<Body>", `<Body actor="maui">`, 1)
	d, s := Sign([]byte(specKey), []byte(body))
	return `<Envelope component="ClusterScheduler" count="1" name="Maui" version="3.3.1">` +
		"<Signature><DigestValue>" + d + "</DigestValue><SignatureValue>" + s + "</SignatureValue></Signature>" + body + "</Envelope>"
}()

// envelope wraps a body in an envelope signed with the spec's key.
func envelope(body string) string {
	d, s := Sign([]byte(specKey), []byte(body))
	return "<Envelope>" + body + "<Signature><DigestValue>" + d + "</DigestValue><SignatureValue>" + s + "</SignatureValue></Signature></Envelope>"
}

// goldFrame frames a payload as Gold's client does; mauiFrame as Maui does.
func goldFrame(payload string) string {
	return "POST /SSSRMAP3 HTTP/1.1\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%X", len(payload)) + "\r\n" + payload + "0\r\n"
}

func mauiFrame(payload string) string {
	return "POST /SSSRMAP3 HTTP/1.1\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nTransfer-Encoding: chunked;\r\n\r\n" +
		fmt.Sprintf("%X", len(payload)) + "\r\n" + payload + "\r\n\x00"
}
