package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// goldClient speaks SSSRMAP3 as spec/gold-sssrmap3.md describes it, and
// was written from it: it uses nothing of package gold, so that a test
// through it checks the listener against the specification rather than
// against its own encoder. It frames as Gold's client does, or as Maui
// does (maui).
type goldClient struct {
	addr, key, actor string
	maui             bool
}

// goldReply is a reply's status, count and data records, each record
// flattened to its fields (a nested record's as "Reservation.Id").
type goldReply struct {
	Value, Code, Message, Count string
	Rows                        []map[string]string
}

// A request's parts, as XML.
func goldOption(name, value string) string {
	return `<Option name="` + name + `">` + escape(value) + `</Option>`
}
func goldGet(name string) string { return `<Get name="` + name + `"/>` }
func goldWhere(name, op, value string) string {
	return `<Where name="` + name + `" op="` + op + `">` + escape(value) + `</Where>`
}

// goldData is a Data element of one record with the fields given as
// name, value pairs.
func goldData(record string, fields ...string) string {
	var b strings.Builder
	b.WriteString("<Data><" + record + ">")
	for i := 0; i+1 < len(fields); i += 2 {
		b.WriteString("<" + fields[i] + ">" + escape(fields[i+1]) + "</" + fields[i] + ">")
	}
	b.WriteString("</" + record + "></Data>")
	return b.String()
}

func escape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// sign is the specification's signature: base64(SHA-1(body)) and
// base64(HMAC-SHA1(key, the raw digest)).
func sign(key, body []byte) (digest, signature string) {
	d := sha1.Sum(body)
	m := hmac.New(sha1.New, key)
	m.Write(d[:])
	return base64.StdEncoding.EncodeToString(d[:]), base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// do sends one request on a connection of its own and reads the reply.
func (g goldClient) do(action, object string, parts ...string) (goldReply, error) {
	return g.send(`<Body><Request action="` + action + `" actor="` + g.actor + `"><Object>` + object + `</Object>` + strings.Join(parts, "") + `</Request></Body>`)
}

// send signs a Body with the key and sends it as the client frames it.
func (g goldClient) send(body string) (goldReply, error) {
	digest, signature := sign([]byte(g.key), []byte(body))
	var payload, head, tail string
	if g.maui {
		// Maui: the signature first, attributes of its own, no declaration
		// and no token; "chunked;", then CRLF and a NUL, no terminator.
		payload = `<Envelope component="ClusterScheduler" count="1" name="Maui" version="3.3.1"><Signature><DigestValue>` + digest +
			`</DigestValue><SignatureValue>` + signature + `</SignatureValue></Signature>` + body + `</Envelope>`
		head, tail = "Transfer-Encoding: chunked;\r\n", "\r\n\x00"
	} else {
		payload = `<?xml version="1.0" encoding="UTF-8"?>` + "\n<Envelope>" + body + `<Signature><DigestValue>` + digest +
			`</DigestValue><SignatureValue>` + signature + `</SignatureValue><SecurityToken type="Symmetric"></SecurityToken></Signature></Envelope>`
		head, tail = "Transfer-Encoding: chunked\r\n", "0\r\n"
	}
	conn, err := net.Dial("tcp", g.addr)
	if err != nil {
		return goldReply{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	request := "POST /SSSRMAP3 HTTP/1.1\r\nContent-Type: text/xml; charset=\"utf-8\"\r\n" + head + "\r\n" + fmt.Sprintf("%X\r\n", len(payload)) + payload + tail
	if _, err := io.WriteString(conn, request); err != nil {
		return goldReply{}, err
	}
	return g.readReply(bufio.NewReader(conn))
}

// readReply reads "HTTP/1.1 200 OK", the head, one chunk and "0\r\n",
// checks the reply's signature and decodes its XML.
func (g goldClient) readReply(r *bufio.Reader) (goldReply, error) {
	status, err := r.ReadString('\n')
	if err != nil || status != "HTTP/1.1 200 OK\r\n" {
		return goldReply{}, fmt.Errorf("status line %q: %v", status, err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return goldReply{}, err
		}
		if line == "\r\n" {
			break
		}
	}
	size, err := r.ReadString('\n')
	if err != nil {
		return goldReply{}, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(size), 16, 32)
	if err != nil {
		return goldReply{}, fmt.Errorf("chunk size %q: %v", size, err)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return goldReply{}, err
	}
	if rest, _ := io.ReadAll(r); string(rest) != "0\r\n" {
		return goldReply{}, fmt.Errorf("after the payload %q, want 0 CRLF and the end", rest)
	}
	if err := g.checkSignature(payload); err != nil {
		return goldReply{}, err
	}
	return decodeGoldReply(payload)
}

// decodeGoldReply decodes a reply's Envelope, or its Body alone.
func decodeGoldReply(payload []byte) (goldReply, error) {
	if !bytes.HasPrefix(payload, []byte("<Body")) {
		start, end := bytes.Index(payload, []byte("<Body")), bytes.Index(payload, []byte("</Body>"))
		if start < 0 || end < 0 {
			return goldReply{}, fmt.Errorf("reply without a Body: %s", payload)
		}
		payload = payload[start : end+len("</Body>")]
	}
	var body struct {
		Response struct {
			Status struct{ Value, Code, Message string }
			Count  string
			Data   struct {
				Records []goldElement `xml:",any"`
			}
		}
	}
	if err := xml.Unmarshal(payload, &body); err != nil {
		return goldReply{}, fmt.Errorf("reply %s: %v", payload, err)
	}
	resp := body.Response
	reply := goldReply{Value: resp.Status.Value, Code: resp.Status.Code, Message: resp.Status.Message, Count: resp.Count}
	for _, rec := range resp.Data.Records {
		row := map[string]string{}
		rec.flatten("", row)
		reply.Rows = append(reply.Rows, row)
	}
	return reply, nil
}

// checkSignature checks a signed reply as the specification says a
// message is checked: on the Body's bytes as received. (An unsigned
// reply, as the specification's example is, passes.)
func (g goldClient) checkSignature(payload []byte) error {
	if !bytes.Contains(payload, []byte("<Signature>")) {
		return nil
	}
	start, end := bytes.Index(payload, []byte("<Body")), bytes.Index(payload, []byte("</Body>"))
	if start < 0 || end < 0 {
		return fmt.Errorf("reply without a Body: %s", payload)
	}
	digest, signature := sign([]byte(g.key), payload[start:end+len("</Body>")])
	if !bytes.Contains(payload, []byte("<DigestValue>"+digest+"</DigestValue><SignatureValue>"+signature+"</SignatureValue>")) {
		return fmt.Errorf("reply not signed with the key: %s", payload)
	}
	return nil
}

// goldElement is an element of a reply's Data.
type goldElement struct {
	XMLName  xml.Name
	Text     string        `xml:",chardata"`
	Children []goldElement `xml:",any"`
}

func (e goldElement) flatten(prefix string, into map[string]string) {
	for _, c := range e.Children {
		if len(c.Children) > 0 {
			c.flatten(prefix+c.XMLName.Local+".", into)
		} else {
			into[prefix+c.XMLName.Local] = c.Text
		}
	}
}
