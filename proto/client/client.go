package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// Client talks to one ingot server as one client.
type Client struct {
	base     *url.URL
	sign     signer
	http     *http.Client
	now      func() time.Time
	attempts int
	backoff  time.Duration
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
	c := &Client{base: u, sign: sign, http: &http.Client{Timeout: 30 * time.Second}, now: time.Now, attempts: 3, backoff: 200 * time.Millisecond}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// NewRequestID is a random request id.
func NewRequestID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// do sends one call, retrying when the answer is lost, and decodes the
// answer into out. requestID is set for changes ("" for reads).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, requestID string, in, out any) error {
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
		retry, err := c.once(ctx, method, target.String(), requestID, body, out)
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
	return fmt.Errorf("client: %s %s: %d attempts: %w", method, path, c.attempts, lastErr)
}

// once sends a freshly signed request; retry says whether sending it again
// could help (the answer was lost or the server was busy).
func (c *Client) once(ctx context.Context, method, target, requestID string, body []byte, out any) (retry bool, err error) {
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
	resp, err := c.http.Do(r)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return true, fmt.Errorf("client: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(raw, &e) != nil || e.Code == "" {
			return resp.StatusCode == http.StatusServiceUnavailable, fmt.Errorf("client: server answered %s: %.200s", resp.Status, raw)
		}
		return resp.StatusCode == http.StatusServiceUnavailable, &e
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("client: decode the answer: %w", err)
	}
	return false, nil
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

// Balance is a node's balance now.
func (c *Client) Balance(ctx context.Context, node string) (ledger.NodeBalance, error) {
	var b ledger.NodeBalance
	return b, c.do(ctx, http.MethodGet, api.PathBalance, url.Values{"node": {node}}, "", nil, &b)
}

// Balances are every account's balances now (admins only).
func (c *Client) Balances(ctx context.Context) ([]ledger.NodeBalance, error) {
	var b api.BalancesResponse
	return b.Balances, c.do(ctx, http.MethodGet, api.PathBalances, nil, "", nil, &b)
}

// Available is what a new lien on the project may take now.
func (c *Client) Available(ctx context.Context, project string) (decimal.Decimal, error) {
	var a api.AvailableResponse
	return a.Available, c.do(ctx, http.MethodGet, api.PathAvailable, url.Values{"project": {project}}, "", nil, &a)
}

// idOr is the caller's request id or a new one.
func idOr(requestID string) string {
	if requestID == "" {
		return NewRequestID()
	}
	return requestID
}

// Deposit deposits credits (requestID "" for a random one).
func (c *Client) Deposit(ctx context.Context, requestID string, d api.DepositRequest) (ledger.Receipt, error) {
	var r ledger.Receipt
	return r, c.do(ctx, http.MethodPost, api.PathDeposits, nil, idOr(requestID), d, &r)
}

// Transfer moves credits between accounts.
func (c *Client) Transfer(ctx context.Context, requestID string, t api.TransferRequest) (ledger.Receipt, error) {
	var r ledger.Receipt
	return r, c.do(ctx, http.MethodPost, api.PathTransfers, nil, idOr(requestID), t, &r)
}

// Quote prices a job.
func (c *Client) Quote(ctx context.Context, q api.QuoteRequest) (lien.QuoteResult, error) {
	var r lien.QuoteResult
	return r, c.do(ctx, http.MethodPost, api.PathQuotes, nil, "", q, &r)
}

// PlaceLien places a job's lien.
func (c *Client) PlaceLien(ctx context.Context, requestID string, l api.LienRequest) (lien.LienResult, error) {
	var r lien.LienResult
	return r, c.do(ctx, http.MethodPost, api.PathLiens, nil, idOr(requestID), l, &r)
}

// ReleaseLien releases a job's lien.
func (c *Client) ReleaseLien(ctx context.Context, requestID string, job api.ReleaseRequest) (ledger.Lien, error) {
	var r ledger.Lien
	return r, c.do(ctx, http.MethodPost, api.PathRelease, nil, idOr(requestID), job, &r)
}

// Charge charges a job.
func (c *Client) Charge(ctx context.Context, requestID string, ch api.ChargeRequest) (lien.ChargeResult, error) {
	var r lien.ChargeResult
	return r, c.do(ctx, http.MethodPost, api.PathCharges, nil, idOr(requestID), ch, &r)
}
