package client

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/munge"
)

// signer authenticates one request: it sets its headers for body at now.
// It runs before each attempt, since the server accepts a signature or a
// credential once.
type signer func(r *http.Request, body []byte, now time.Time) error

// Options say how a client reaches the server and proves who it is: with
// an HMAC key, with MUNGE, or on the server's Unix socket with neither (the
// server knows the caller by their uid).
type Options struct {
	// Server is the server's base URL, e.g. http://127.0.0.1:8080. With
	// Socket it only names the server in the Host header; "" means
	// http://localhost.
	Server string
	// KeyFile is a key file (auth.ParseKeyFile) to sign requests with.
	KeyFile string
	// Key, if not nil, is the key to sign requests with, given rather
	// than read from a file (a bank signing its requests to a peer).
	Key *auth.Key
	// Munge authenticates each request with a fresh MUNGE credential made
	// by the munge program (on PATH) instead of a key: the server acts as
	// the bank user of the caller's account.
	Munge bool
	// MungeSocket is munged's socket for munge -S; "" for munge's default.
	MungeSocket string
	// Socket connects to the server's Unix socket at this path rather than
	// over TCP (see WithSocket).
	Socket string
	// CAFile is a PEM file of the certificate authorities an https server's
	// certificate is checked against, instead of the system's.
	CAFile string
}

// Open returns a client as o says; opts apply after o.
func Open(o Options, opts ...Option) (*Client, error) {
	var sign signer
	switch {
	case o.Key != nil:
		key := *o.Key
		sign = func(r *http.Request, body []byte, now time.Time) error { return auth.Sign(r, body, key, now) }
	case o.KeyFile != "" && o.Munge:
		return nil, errors.New("client: a key file or MUNGE, not both")
	case o.KeyFile != "":
		raw, err := auth.ReadSecretFile(o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		key, err := auth.ParseKeyFile(raw)
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", o.KeyFile, err)
		}
		sign = func(r *http.Request, body []byte, now time.Time) error { return auth.Sign(r, body, key, now) }
	case o.Munge:
		sign = munge.Command{Socket: o.MungeSocket}.Sign
	case o.Socket != "":
		// The server knows the socket's peer by its uid.
		sign = func(*http.Request, []byte, time.Time) error { return nil }
	default:
		return nil, errors.New("client: no way to authenticate: give a key file, MUNGE, or the server's Unix socket")
	}
	server := o.Server
	if server == "" && o.Socket != "" {
		server = "http://localhost"
	}
	if o.Socket != "" {
		opts = append([]Option{WithSocket(o.Socket)}, opts...)
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("client: CA file: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: CA file %s holds no PEM certificate", o.CAFile)
		}
		opts = append([]Option{WithRoots(roots)}, opts...)
	}
	return newClient(server, sign, opts...)
}

// WithSocket connects to the server's Unix socket at path instead of the
// base URL's host and port; the base URL then only gives the Host header
// (use http://, not https://). It replaces the HTTP client's transport, so
// it goes after WithHTTPClient.
func WithSocket(path string) Option {
	return func(c *Client) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		h := *c.http
		h.Transport = t
		c.http = &h
		c.name = "unix:" + path
	}
}
