package gold

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// echo is a Handler that checks the signature with the spec's key and
// answers with the request's object, action and number of data records;
// action Panic panics.
type echo struct{}

func (echo) ServeGold(_ context.Context, m *Message) Reply {
	if err := m.CheckDigest(); err != nil {
		return Reply{Response: Failure("", err)}
	}
	if !m.SignedWith([]byte(specKey)) {
		return Reply{Response: Failure("", Errorf(CodeAuthentication, "no key signed it"))}
	}
	r, err := m.Request()
	if err != nil {
		return Reply{Response: Failure("", err), Key: []byte(specKey)}
	}
	if r.Action == "Panic" {
		panic("asked to")
	}
	return Reply{Response: Response{Actor: r.Actor, Code: CodeSuccess, Message: r.Object + " " + r.Action, Count: strconv.Itoa(len(r.Data))},
		Key: []byte(specKey), Client: "test", Object: r.Object, Action: r.Action}
}

// startServer serves echo on a loopback port.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Handler = echo{}
	s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return ln.Addr().String()
}

// exchange sends raw on a new connection and reads the reply as a client
// written from the specification does: the head, one chunk of the size it
// announces, then "0\r\n", then the end of the connection.
func exchange(t *testing.T, addr, raw string) (Response, *Message) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return parseReply(t, string(all))
}

func parseReply(t *testing.T, all string) (Response, *Message) {
	t.Helper()
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nTransfer-Encoding: chunked\r\n\r\n"
	rest, ok := strings.CutPrefix(all, head)
	size, rest, ok2 := strings.Cut(rest, "\r\n")
	n, err := strconv.ParseUint(size, 16, 32)
	if !ok || !ok2 || err != nil || len(rest) != int(n)+3 || rest[n:] != "0\r\n" {
		t.Fatalf("reply not framed as the specification says: %q", all)
	}
	m, err := ParseMessage([]byte(rest[:n]))
	if err != nil {
		t.Fatalf("reply %q: %v", rest[:n], err)
	}
	var r Response
	resp := m.body.children[0]
	r.Actor, _ = resp.attr("actor")
	for _, c := range resp.children {
		switch c.name {
		case "Status":
			for _, s := range c.children {
				switch s.name {
				case "Code":
					r.Code = Code(s.text.String())
				case "Message":
					r.Message = s.text.String()
				case "Value":
					if v := s.text.String(); v == "Warning" {
						r.Warning = true
					}
				}
			}
		case "Count":
			r.Count = c.text.String()
		}
	}
	return r, m
}

// TestServer answers requests framed as Gold's client and Maui frame them,
// signing the reply, and answers every failure with its code and closes.
func TestServer(t *testing.T) {
	addr := startServer(t, &Server{ReadTimeout: 300 * time.Millisecond, MaxPayload: 4096})
	for name, raw := range map[string]string{"gold": goldFrame(specXML), "maui": mauiFrame(mauiXML)} {
		t.Run(name, func(t *testing.T) {
			r, m := exchange(t, addr, raw)
			if r.Code != CodeSuccess || r.Message != "Job Reserve" || r.Count != "1" || r.Actor != "slurm" {
				t.Errorf("reply %+v", r)
			}
			if m.CheckDigest() != nil || !m.SignedWith([]byte(specKey)) {
				t.Error("the reply is not signed with the request's key")
			}
		})
	}
	failures := []struct {
		name, raw string
		code      Code
		says      string
	}{
		{"malformed XML", goldFrame("<Envelope>"), CodeMalformed, "not well-formed"},
		{"wrong length", strings.Replace(goldFrame(specXML), fmt.Sprintf("%X\r\n", len(specXML)), "zz\r\n", 1), CodeMalformed, "hexadecimal"},
		{"oversized", "POST /SSSRMAP3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1001\r\n", CodeMalformed, "over the limit of 4096"},
		{"slow client", "POST /SSSRMAP3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n<Env", CodeMalformed, "did not arrive within 300ms"},
		{"changed body", goldFrame(strings.Replace(specXML, "4242", "4243", 1)), CodeAuthentication, "changed after it was signed"},
		{"no actor", goldFrame(envelope(`<Body><Request action="Query"><Object>Job</Object></Request></Body>`)), CodeBadActor, "no actor"},
		{"panic", goldFrame(envelope(`<Body><Request action="Panic" actor="x"><Object>Job</Object></Request></Body>`)), CodeInternal, "internal error"},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			r, _ := exchange(t, addr, f.raw)
			if r.Code != f.code || !strings.Contains(r.Message, f.says) {
				t.Errorf("reply %+v; want code %s saying %q", r, f.code, f.says)
			}
		})
	}
	// A client that sends nothing and never closes is answered at the
	// deadline too, and the server goes on serving.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := io.ReadAll(bufio.NewReader(c))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := parseReply(t, string(all)); r.Code != CodeMalformed {
		t.Errorf("silent client: %+v", r)
	}
	if r, _ := exchange(t, addr, goldFrame(specXML)); r.Code != CodeSuccess {
		t.Errorf("after the failures: %+v", r)
	}
}
