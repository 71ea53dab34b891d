package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// Client talks to one ingot server as one client.
type Client struct {
	base *url.URL
	// name is the server as its errors name it: the base URL, or
	// unix:PATH for the socket (whose base URL only gives a Host header).
	name     string
	sign     signer
	http     *http.Client
	now      func() time.Time
	attempts int
	backoff  time.Duration
	// precision is the bank's precision plus one, as the last answer
	// that said it (api.HeaderPrecision) said; 0 until one has.
	precision atomic.Int32
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (default: a 30 s timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithClock replaces the clock requests are signed with.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithRetries sets how many times a request is sent at most (default 3)
// and the first pause between attempts (doubled each time; default 200 ms).
func WithRetries(attempts int, backoff time.Duration) Option {
	return func(c *Client) { c.attempts, c.backoff = max(attempts, 1), backoff }
}

// New returns a client of the server at baseURL (e.g.
// http://127.0.0.1:8080) that signs with key. Open makes the other kinds.
func New(baseURL string, key auth.Key, opts ...Option) (*Client, error) {
	return newClient(baseURL, func(r *http.Request, body []byte, now time.Time) error {
		return auth.Sign(r, body, key, now)
	}, opts...)
}

// newClient returns a client of the server at baseURL that authenticates
// its requests with sign.
func newClient(baseURL string, sign signer, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server %q is not an http(s)://host[:port] URL", baseURL)
	}
	c := &Client{base: u, name: u.String(), sign: sign, http: &http.Client{Timeout: 30 * time.Second, Transport: newTransport()},
		now: time.Now, attempts: 3, backoff: 200 * time.Millisecond}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// maxIdlePerHost is how many idle connections a client keeps to its
// server. net/http's default transport keeps two: a scheduler sending
// from many goroutines through one client would open a new connection for
// nearly every request beyond the second (a TCP handshake, and a socket
// left in TIME_WAIT, each time).
const maxIdlePerHost = 64

// WithRoots checks an https server's certificate against roots rather
// than the system's certificate authorities.
func WithRoots(roots *x509.CertPool) Option {
	return func(c *Client) {
		if t, ok := c.http.Transport.(*http.Transport); ok {
			t.TLSClientConfig.RootCAs = roots
		}
	}
}

// newTransport is net/http's default transport keeping maxIdlePerHost
// idle connections, speaking TLS 1.2 or later.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	t.MaxIdleConns = max(t.MaxIdleConns, maxIdlePerHost)
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}

// NewRequestID is a new request id (auth.NewRequestID).
func NewRequestID() string { return auth.NewRequestID() }

// do sends one call, retrying when the answer is lost, and decodes the
// answer into out. requestID is set for changes ("" for reads).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, requestID string, in, out any) error {
	return c.doWith(ctx, c.http, method, path, query, requestID, in, out)
}

// doLong is do for a call that takes as long as the bank is large (an
// audit, a backup): no total timeout, only ctx's.
func (c *Client) doLong(ctx context.Context, method, path string, query url.Values, out any) error {
	long := *c.http
	long.Timeout = 0
	return c.doWith(ctx, &long, method, path, query, "", nil, out)
}

func (c *Client) doWith(ctx context.Context, hc *http.Client, method, path string, query url.Values, requestID string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("client: encode %s: %w", path, err)
		}
	}
	target := *c.base
	target.Path += path
	target.RawQuery = query.Encode()
	pause := c.backoff
	var lastErr error
	for attempt := 1; attempt <= c.attempts; attempt++ {
		retry, err := c.once(ctx, hc, method, target.String(), requestID, body, out)
		if err == nil || !retry {
			return err
		}
		lastErr = err
		if attempt < c.attempts {
			select {
			case <-ctx.Done():
				return fmt.Errorf("client: %s %s: %w (after: %v)", method, path, ctx.Err(), lastErr)
			case <-time.After(pause):
			}
			pause *= 2
		}
	}
	if c.attempts > 1 {
		return fmt.Errorf("%w (tried %d times)", lastErr, c.attempts)
	}
	return lastErr
}

// UnreachableError is a request that did not reach the server, or whose
// answer was lost. Its message names the server and the network's reason,
// not the request: which request the command needed is no help to its user.
type UnreachableError struct {
	Server string
	Err    *url.Error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("server %s cannot be reached: %v", e.Server, e.Err.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// once sends a freshly signed request; retry says whether sending it again
// could help (the answer was lost or the server was busy).
func (c *Client) once(ctx context.Context, hc *http.Client, method, target, requestID string, body []byte, out any) (retry bool, err error) {
	r, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if requestID != "" {
		r.Header.Set(api.HeaderRequestID, requestID)
	}
	if err := c.sign(r, body, c.now()); err != nil {
		return false, fmt.Errorf("client: sign: %w", err)
	}
	resp, err := hc.Do(r)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = &UnreachableError{Server: c.name, Err: ue}
		}
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	if p, err := strconv.ParseInt(resp.Header.Get(api.HeaderPrecision), 10, 32); err == nil && p >= 0 && p <= maxPrecision {
		c.precision.Store(int32(p) + 1)
	}
	if w, ok := out.(io.Writer); ok && resp.StatusCode == http.StatusOK {
		// A stream, not JSON; not retried, as part of it may be written.
		if _, err := io.Copy(w, resp.Body); err != nil {
			return false, fmt.Errorf("server %s: reading the answer: %w", c.name, err)
		}
		return false, nil
	}
	raw, err := readAnswer(resp)
	if err != nil {
		return true, fmt.Errorf("server %s: reading the answer: %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(raw, &e) != nil || e.Code == "" {
			return resp.StatusCode == http.StatusServiceUnavailable, fmt.Errorf("server %s answered %s, not as an ingot server does: %.200q", c.name, resp.Status, raw)
		}
		return resp.StatusCode == http.StatusServiceUnavailable, &e
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("server %s: decode the answer: %w", c.name, err)
	}
	return false, nil
}

// maxPrecision bounds the precision an answer may say: a bank's is at most
// a few places; a header beyond this is not believed.
const maxPrecision = 30

// Precision is the bank's number of decimal places as the server's answers
// say it (api.HeaderPrecision), and whether one has: a client prints an
// answer's amounts with it rather than asking Settings first. ok is false
// before the first answer, and from a server that does not say it.
func (c *Client) Precision() (precision int32, ok bool) {
	p := c.precision.Load()
	return p - 1, p > 0
}

// maxAnswer bounds the answers read.
const maxAnswer = 64 << 20

// readAnswer reads an answer's body, up to maxAnswer bytes. With the length
// announced (the server's JSON answers have it), the body is read into one
// buffer of that size: io.ReadAll grows its buffer step by step, and that
// was a quarter of what a client allocated per request.
func readAnswer(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxAnswer {
		raw := make([]byte, n)
		_, err := io.ReadFull(resp.Body, raw)
		return raw, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
}

// IsCode reports whether err is an error from the server with the code.
func IsCode(err error, code api.Code) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == code
}

// Health checks that the server answers and can read the bank.
func (c *Client) Health(ctx context.Context) error {
	var h api.HealthResponse
	return c.do(ctx, http.MethodGet, api.PathHealth, nil, "", nil, &h)
}

// get sends a GET with the parameters of query (an api query type) and
// decodes the answer.
func get[T any](ctx context.Context, c *Client, path string, query any) (T, error) {
	var out T
	err := c.do(ctx, http.MethodGet, path, api.EncodeQuery(query), "", nil, &out)
	return out, err
}

// post sends a change with its request id ("" for a random one) and
// decodes the answer.
func post[T any](ctx context.Context, c *Client, path, requestID string, body any) (T, error) {
	var out T
	err := c.do(ctx, http.MethodPost, path, nil, idOr(requestID), body, &out)
	return out, err
}

// items unwraps the answer of an endpoint that lists.
func items[T any](l api.List[T], err error) ([]T, error) { return l.Items, err }

// idOr is the caller's request id or a new one.
func idOr(requestID string) string {
	if requestID == "" {
		return NewRequestID()
	}
	return requestID
}
