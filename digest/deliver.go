package digest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/smtp"
	"strings"
	"time"
)

// Mailer sends digests by email over SMTP: STARTTLS when the server
// offers it, then AUTH PLAIN when a user is set (net/smtp sends it only
// over TLS or to localhost).
type Mailer struct {
	// Addr is the mail server, host:port.
	Addr string
	From string
	// Hello is the name this host gives in EHLO ("": localhost).
	Hello string
	// Username and Password authenticate, when Username is set.
	Username, Password string
	// TLS is the STARTTLS configuration (nil: the host's roots, the
	// server's name from Addr).
	TLS *tls.Config
	// Timeout bounds the whole exchange with the server (0: 30s).
	Timeout time.Duration
}

// Send mails d to its recipient's address.
func (m *Mailer) Send(ctx context.Context, d Digest) error {
	timeout := m.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", m.Addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(m.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", m.Addr, err)
	}
	defer c.Close()
	if m.Hello != "" {
		if err := c.Hello(m.Hello); err != nil {
			return fmt.Errorf("smtp %s: EHLO %s: %w", m.Addr, m.Hello, err)
		}
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := m.TLS
		if cfg == nil {
			cfg = &tls.Config{ServerName: host}
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("smtp %s: STARTTLS: %w", m.Addr, err)
		}
	}
	if m.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, host)); err != nil {
			return fmt.Errorf("smtp %s: AUTH: %w", m.Addr, err)
		}
	}
	if err := c.Mail(m.From); err != nil {
		return fmt.Errorf("smtp %s: MAIL FROM %s: %w", m.Addr, m.From, err)
	}
	if err := c.Rcpt(d.To.Address); err != nil {
		return fmt.Errorf("smtp %s: RCPT TO %s: %w", m.Addr, d.To.Address, err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp %s: DATA: %w", m.Addr, err)
	}
	if _, err := w.Write(m.message(d)); err != nil {
		return fmt.Errorf("smtp %s: %w", m.Addr, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp %s: end of DATA: %w", m.Addr, err)
	}
	return c.Quit()
}

// message is d as an RFC 5322 message: plain UTF-8 text, CRLF lines.
func (m *Mailer) message(d Digest) []byte {
	var b bytes.Buffer
	id := make([]byte, 12)
	_, _ = rand.Read(id) // crypto/rand never fails (Go 1.24)
	domain := m.From[strings.LastIndexByte(m.From, '@')+1:]
	for _, h := range [][2]string{
		{"From", m.From},
		{"To", d.To.Address},
		{"Subject", mime.QEncoding.Encode("utf-8", d.Subject)},
		{"Date", d.state.Last.Local().Format(time.RFC1123Z)},
		{"Message-ID", "<" + hex.EncodeToString(id) + "@" + domain + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"},
		{"Content-Transfer-Encoding", "8bit"},
		{"Auto-Submitted", "auto-generated"},
	} {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	b.WriteString(strings.ReplaceAll(d.Text, "\n", "\r\n"))
	return b.Bytes()
}

// SignatureHeader is the header of a webhook's POST that holds
// "sha256=" and the hex HMAC-SHA256 of the body under the shared secret.
const SignatureHeader = "X-Ingot-Signature"

// Webhooks posts digests as JSON to their recipient's URL, signed.
type Webhooks struct {
	Secret []byte
	// Client is the HTTP client (nil: one with a 30s timeout).
	Client *http.Client
}

// WebhookBody is what a webhook receives: text is what Slack's and
// Mattermost's incoming webhooks show.
type WebhookBody struct {
	Text       string      `json:"text"`
	Subject    string      `json:"subject"`
	User       string      `json:"user,omitempty"`
	Conditions []Condition `json:"conditions"`
}

// Sign is the value of SignatureHeader for body.
func Sign(secret, body []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return "sha256=" + hex.EncodeToString(h.Sum(nil))
}

// Send posts d to its recipient's URL; any answer but 2xx is a failure.
func (wh *Webhooks) Send(ctx context.Context, d Digest) error {
	body, err := json.Marshal(WebhookBody{Text: d.Subject + "\n\n" + d.Text, Subject: d.Subject, User: d.To.User, Conditions: d.Conditions})
	if err != nil {
		return fmt.Errorf("webhook: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.To.Address, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", d.To.Address, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(wh.Secret, body))
	client := wh.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: answered %s", d.To.Address, resp.Status)
	}
	return nil
}
