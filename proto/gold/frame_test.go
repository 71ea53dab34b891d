package gold

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
)

func readPayload(raw string, limit int) (string, error) {
	p, err := ReadPayload(bufio.NewReaderSize(strings.NewReader(raw), maxHeaderLine), limit)
	return string(p), err
}

// TestReadPayload reads each framing a client uses, and refuses what is
// not one with 242, naming what is wrong.
func TestReadPayload(t *testing.T) {
	ok := []struct{ name, raw string }{
		{"gold", goldFrame(specXML)},
		{"maui", mauiFrame(mauiXML)},
		{"maui, the NUL counted", "POST /SSSRMAP3 HTTP/1.1\r\nTransfer-Encoding: chunked;\r\n\r\n" + fmt.Sprintf("%x", len(specXML)+1) + "\r\n" + specXML + "\x00"},
		{"content length, no host, path /gold", "POST /gold HTTP/1.0\r\nContent-Length: " + fmt.Sprint(len(specXML)) + "\r\n\r\n" + specXML},
		{"bare newlines, a chunk extension", "POST /SSSRMAP HTTP/1.1\nTransfer-Encoding: Chunked\n\n" + fmt.Sprintf("%x;x=1", len(specXML)) + "\n" + specXML},
		{"nothing after the payload", strings.TrimSuffix(goldFrame(specXML), "0\r\n")},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			got, err := readPayload(c.raw, DefaultMaxPayload)
			if err != nil {
				t.Fatal(err)
			}
			want := specXML
			if strings.Contains(c.name, "maui") && !strings.Contains(c.name, "NUL") {
				want = mauiXML
			}
			if got != want {
				t.Errorf("payload %q; want %q", got, want)
			}
		})
	}
	head := "POST /SSSRMAP3 HTTP/1.1\r\n"
	bad := []struct{ name, raw, says string }{
		{"GET", "GET /SSSRMAP3 HTTP/1.1\r\n\r\n", "method"},
		{"other path", "POST /v1/liens HTTP/1.1\r\n\r\n", "path"},
		{"not HTTP", "POST /SSSRMAP3\r\n\r\n", "request line"},
		{"no length", head + "\r\n", "length is unknown"},
		{"both lengths", head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "both"},
		{"two lengths", head + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", "repeated"},
		{"gzip", head + "Transfer-Encoding: gzip\r\n\r\n", "only chunked"},
		{"json", head + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", "text/xml"},
		{"negative length", head + "Content-Length: -1\r\n\r\n", "not a number"},
		{"plus length", head + "Content-Length: +1\r\n\r\n", "not a number"},
		{"empty", head + "Content-Length: 0\r\n\r\n", "empty"},
		{"bad chunk size", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", "hexadecimal"},
		{"huge chunk size", head + "Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFF\r\n", "hexadecimal"},
		{"over the limit", head + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x", DefaultMaxPayload+1) + "\r\n", "over the limit"},
		{"short payload", head + "Content-Length: 100\r\n\r\n<Envelope/>", "ended after 11 of the 100"},
		{"no colon", head + "Transfer-Encoding chunked\r\n\r\n", "no colon"},
		{"long line", head + "X: " + strings.Repeat("a", maxHeaderLine) + "\r\n\r\n", "longer than"},
		{"many lines", head + strings.Repeat("X: y\r\n", maxHeaderLines+1), "more than 64"},
		{"cut in the head", head + "Content-Length: 5\r\n", "ended before"},
		{"nothing", "", "ended before"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := readPayload(c.raw, DefaultMaxPayload)
			if !hasCode(err, CodeMalformed) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %v; want 242 saying %q", err, c.says)
			}
		})
	}
}

// TestWriteReply frames a reply as the specification says: 200, text/xml,
// one chunk, then 0 and CRLF straight after the payload.
func TestWriteReply(t *testing.T) {
	var b strings.Builder
	if err := WriteReply(&b, []byte("<Envelope/>")); err != nil {
		t.Fatal(err)
	}
	want := "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nTransfer-Encoding: chunked\r\n\r\nB\r\n<Envelope/>0\r\n"
	if b.String() != want {
		t.Errorf("reply %q; want %q", b.String(), want)
	}
}
