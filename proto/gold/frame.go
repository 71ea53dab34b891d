package gold

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
)

// Paths are the request paths a message may be posted to: Gold's clients
// post to /SSSRMAP3, older ones to /SSSRMAP, its SOAP clients to /gold.
var Paths = []string{"/SSSRMAP3", "/SSSRMAP", "/gold"}

// Bounds of a request's header, which nothing a client sends needs to
// come near: a line (so a client cannot make a reader buffer without end)
// and the number of header lines.
const (
	maxHeaderLine  = 4096
	maxHeaderLines = 64
)

// ReadPayload reads a request's HTTP-like head and its payload from r,
// which must buffer at least maxHeaderLine bytes. The payload's length is
// a Content-Length header's, or, with Transfer-Encoding: chunked (Maui
// writes "chunked;"), that of the one chunk that follows the head; exactly
// that many bytes are read, and nothing after them: Gold's clients end the
// chunk with "0\r\n" and Maui with "\r\n" and a NUL, so a reader that
// waited for a proper terminator would wait for ever. Trailing NULs within
// the length are dropped. A payload longer than limit is refused before it
// is read. The errors are *Error (code 242), or the reader's own (a
// deadline, a closed connection) wrapped with how far the read got.
func ReadPayload(r *bufio.Reader, limit int) ([]byte, error) {
	line, err := readLine(r, "the request line")
	if err != nil {
		return nil, err
	}
	if err := checkRequestLine(line); err != nil {
		return nil, err
	}
	length, chunked, err := readHead(r, limit)
	if err != nil {
		return nil, err
	}
	if chunked {
		line, err := readLine(r, "the chunk size")
		if err != nil {
			return nil, err
		}
		if length, err = chunkSize(line, limit); err != nil {
			return nil, err
		}
	}
	payload := make([]byte, length)
	if n, err := io.ReadFull(r, payload); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, Errorf(CodeMalformed, "the connection ended after %d of the %d bytes announced", n, length)
		}
		return nil, fmt.Errorf("reading the payload (%d of %d bytes): %w", n, length, err)
	}
	return bytes.TrimRight(payload, "\x00"), nil
}

// readLine reads one line of the head without its line ending ("\r\n", or
// a bare "\n").
func readLine(r *bufio.Reader, what string) (string, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine:
		return "", Errorf(CodeMalformed, "%s is longer than %d bytes", what, maxHeaderLine)
	case errors.Is(err, io.EOF):
		return "", Errorf(CodeMalformed, "the connection ended before %s", what)
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"), nil
}

// checkRequestLine accepts "POST <path> HTTP/1.x" for one of Paths.
// Gold's own server read the first three words and no more, and so does
// this: a client library that appends its own version after the path
// Gold's client gave it works with both.
func checkRequestLine(line string) error {
	words := strings.Fields(line)
	if len(words) < 3 || !strings.HasPrefix(words[2], "HTTP/1.") {
		return Errorf(CodeMalformed, "the request line %s is not POST <path> HTTP/1.1", ledger.Excerpt(line))
	}
	if words[0] != "POST" {
		return Errorf(CodeMalformed, "method %s: SSSRMAP requests are POSTs", ledger.Excerpt(words[0]))
	}
	for _, p := range Paths {
		if words[1] == p {
			return nil
		}
	}
	return Errorf(CodeMalformed, "path %s: post to %s", ledger.Excerpt(words[1]), strings.Join(Paths, ", "))
}

// readHead reads the header lines up to the empty line and returns the
// payload's length (for Content-Length) or that it is chunked.
func readHead(r *bufio.Reader, limit int) (length int, chunked bool, err error) {
	var encoding, contentLength string
	seen := map[string]bool{}
	for n := 0; ; n++ {
		if n == maxHeaderLines {
			return 0, false, Errorf(CodeMalformed, "more than %d header lines", maxHeaderLines)
		}
		line, err := readLine(r, "the end of the header")
		if err != nil {
			return 0, false, err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return 0, false, Errorf(CodeMalformed, "header line %s has no colon", ledger.Excerpt(line))
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		switch name {
		case "transfer-encoding", "content-length", "content-type":
			if seen[name] {
				return 0, false, Errorf(CodeMalformed, "header %s is repeated", name)
			}
			seen[name] = true
		}
		switch name {
		case "transfer-encoding":
			encoding = value
		case "content-length":
			contentLength = value
		case "content-type":
			media, _, _ := strings.Cut(value, ";")
			if !strings.EqualFold(strings.TrimSpace(media), "text/xml") {
				return 0, false, Errorf(CodeMalformed, "content type %s: SSSRMAP messages are text/xml", ledger.Excerpt(value))
			}
		}
	}
	switch {
	case encoding != "" && contentLength != "":
		// Which one wins is where request smuggling lives: neither.
		return 0, false, Errorf(CodeMalformed, "both Transfer-Encoding and Content-Length: send one")
	case encoding != "":
		// Maui writes "chunked;": what follows the semicolon is ignored.
		coding, _, _ := strings.Cut(encoding, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "chunked") {
			return 0, false, Errorf(CodeMalformed, "transfer encoding %s: only chunked is read", ledger.Excerpt(encoding))
		}
		return 0, true, nil
	case contentLength != "":
		n, err := strconv.ParseUint(contentLength, 10, 31)
		if err != nil || contentLength[0] == '+' {
			return 0, false, Errorf(CodeMalformed, "content length %s is not a number of bytes", ledger.Excerpt(contentLength))
		}
		return checkLength(int(n), limit)
	}
	return 0, false, Errorf(CodeMalformed, "neither Transfer-Encoding: chunked nor Content-Length: the payload's length is unknown")
}

// chunkSize reads the size line of the one chunk: hex digits, and
// optionally a chunk extension after a semicolon, which is ignored.
func chunkSize(line string, limit int) (int, error) {
	digits, _, _ := strings.Cut(line, ";")
	digits = strings.TrimSpace(digits)
	n, err := strconv.ParseUint(digits, 16, 31)
	if err != nil || digits == "" || digits[0] == '+' {
		return 0, Errorf(CodeMalformed, "chunk size %s is not a hexadecimal number of bytes", ledger.Excerpt(line))
	}
	length, _, err := checkLength(int(n), limit)
	return length, err
}

func checkLength(n, limit int) (int, bool, error) {
	switch {
	case n == 0:
		return 0, false, Errorf(CodeMalformed, "the payload is empty")
	case n > limit:
		return 0, false, Errorf(CodeMalformed, "the payload of %d bytes is over the limit of %d", n, limit)
	}
	return n, false, nil
}

// WriteReply writes a reply's payload framed as Gold's server framed it:
// one chunk, then "0\r\n" straight after the payload, as Gold's clients
// write theirs and read ours.
func WriteReply(w io.Writer, payload []byte) error {
	var b bytes.Buffer
	b.Grow(len(payload) + 128)
	fmt.Fprintf(&b, "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nTransfer-Encoding: chunked\r\n\r\n%X\r\n", len(payload))
	b.Write(payload)
	b.WriteString("0\r\n")
	_, err := w.Write(b.Bytes())
	return err
}
