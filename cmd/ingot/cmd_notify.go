package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// notifyFlags are the settings of the digests (package digest), read by
// `ingot notify` and by `ingot serve`, which sends them with --notify-at.
func notifyFlags() []cli.Flag {
	d := digest.DefaultRules
	return []cli.Flag{
		&cli.StringFlag{Name: "smtp-server", EnvVars: []string{"INGOT_SMTP_SERVER"}, Usage: "mail digests through the SMTP server at `HOST:PORT` (STARTTLS when it offers it)"},
		&cli.StringFlag{Name: "smtp-from", EnvVars: []string{"INGOT_SMTP_FROM"}, Usage: "the digests' sender `ADDRESS` (default: ingot@ this host's name)"},
		&cli.StringFlag{Name: "smtp-user", EnvVars: []string{"INGOT_SMTP_USER"}, Usage: "authenticate to the SMTP server as `USER` (AUTH PLAIN, over TLS)"},
		&cli.StringFlag{Name: "smtp-password-file", EnvVars: []string{"INGOT_SMTP_PASSWORD_FILE"}, Usage: "--smtp-user's password, in `FILE` (mode 600)"},
		&cli.DurationFlag{Name: "smtp-timeout", Value: 30 * time.Second, EnvVars: []string{"INGOT_SMTP_TIMEOUT"},
			Usage: "give up an attempt to mail a digest after `LONG` (connecting, and the whole exchange)"},
		&cli.StringFlag{Name: "smtp-ca-file", EnvVars: []string{"INGOT_SMTP_CA_FILE"}, Usage: "trust the SMTP server's certificate if signed by the CA in PEM `FILE` (default: the system's)"},
		&cli.StringFlag{Name: "webhook-secret-file", EnvVars: []string{"INGOT_WEBHOOK_SECRET_FILE"},
			Usage: "post digests to webhooks, signed with the secret in `FILE` (mode 600): header " + digest.SignatureHeader + ": sha256=HMAC-SHA256(body)"},
		&cli.StringSliceFlag{Name: "notify-admin", EnvVars: []string{"INGOT_NOTIFY_ADMIN"}, Usage: "mail the bank's digest (every account) to `ADDRESS` (repeatable, or comma-separated)"},
		&cli.StringFlag{Name: "notify-admin-webhook", EnvVars: []string{"INGOT_NOTIFY_ADMIN_WEBHOOK"}, Usage: "post the bank's digest to `URL`"},
		&cli.StringFlag{Name: "notify-low-percent", Value: d.LowPercent.String(), EnvVars: []string{"INGOT_NOTIFY_LOW_PERCENT"},
			Usage: "tell when a node has less than `PERCENT` of what its account's allocations gave"},
		&cli.IntFlag{Name: "notify-runway-days", Value: d.RunwayDays, EnvVars: []string{"INGOT_NOTIFY_RUNWAY_DAYS"},
			Usage: "tell when, at the last 30 days' rate, a node runs out within `DAYS`"},
		&cli.IntFlag{Name: "notify-ending-days", Value: d.EndingDays, EnvVars: []string{"INGOT_NOTIFY_ENDING_DAYS"}, Usage: "tell when an allocation ends within `DAYS`"},
		&cli.DurationFlag{Name: "notify-period", Value: d.Period, EnvVars: []string{"INGOT_NOTIFY_PERIOD"}, Usage: "send each recipient one digest a `PERIOD` at most"},
		&cli.DurationFlag{Name: "notify-repeat", Value: d.Repeat, EnvVars: []string{"INGOT_NOTIFY_REPEAT"}, Usage: "tell a condition that lasts, unchanged, again after `LONG`"},
		&cli.IntFlag{Name: "notify-attempts", Value: 3, EnvVars: []string{"INGOT_NOTIFY_ATTEMPTS"}, Usage: "try each delivery `N` times before leaving it to the next run"},
		&cli.DurationFlag{Name: "notify-retry-wait", Value: 10 * time.Second, EnvVars: []string{"INGOT_NOTIFY_RETRY_WAIT"},
			Usage: "wait `LONG` before the second attempt, twice as long before each next"},
	}
}

func notifyCommands() []*cli.Command {
	flags := append(notifyFlags(),
		&cli.BoolFlag{Name: "dry-run", Usage: "print the digests that would be sent now; send and record nothing"},
		&cli.StringFlag{Name: "config", EnvVars: []string{"INGOT_CONFIG"}, Usage: "read the settings above from serve's TOML `FILE` (its other keys are ignored)"})
	return []*cli.Command{{
		Name:  "notify",
		Usage: "send each person the digest of what changed in their accounts and projects since their last (docs/notifications.md)",
		Description: "Users get their projects' (ingot user modify NAME --email ADDR), managers their accounts', --notify-admin the bank's;\n" +
			"at most one digest a --notify-period each, with only what they were not told. Through --server, the server sends\n" +
			"them with its own settings (an admin's request; what ingot-notify.timer does). ingot serve --notify-at HH:MM sends them daily.",
		Flags:  flags,
		Action: notifyRun,
	}}
}

func notifyRun(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	if flagString(c, "server") == "" {
		if err := applyConfig(c, notifyFileKeys(), serveFileKeys()); err != nil {
			return err
		}
	}
	return withBank(c, func(b bank) error {
		ds, err := b.Notify(c.Context, c.Bool("dry-run"))
		if err != nil && len(ds) == 0 {
			return err // nothing was run: no "no digest is due" before the reason
		}
		if ds == nil {
			ds = []digest.Digest{}
		}
		if f, ferr := outputFormat(c); ferr == nil && f == formatJSON {
			return joinErr(writeJSON(c.App.Writer, ds), err)
		}
		if c.Bool("dry-run") {
			for _, d := range ds {
				fmt.Fprintf(c.App.Writer, "To: %s (%s)\nSubject: %s\n\n%s\n", d.To.Address, d.To.Key(), d.Subject, d.Text)
			}
			if len(ds) == 0 {
				fmt.Fprintln(c.App.Writer, "no digest is due")
			}
			return err
		}
		t := table{headers: []string{"To", "Address", "Conditions", "Sent", "Error"}, data: ds}
		for _, d := range ds {
			t.add(d.To.Key(), d.To.Address, fmt.Sprint(len(d.Conditions)), yesNo(d.Sent), d.Error)
		}
		return joinErr(show(c, t), err)
	})
}

// joinErr is err, else the writing's error.
func joinErr(written, err error) error {
	if err != nil {
		return err
	}
	return written
}

// notifyFileKeys are the keys of serve's config file that notify reads.
func notifyFileKeys() []string {
	keys := []string{"db", "store"}
	for _, f := range notifyFlags() {
		keys = append(keys, f.Names()[0])
	}
	return keys
}

// notifier is the digests' notifier of l with the settings of c: a
// channel without its settings is off. It is nil when neither email nor
// webhooks are set.
func notifier(c *cli.Context, l *ledger.Ledger, log *slog.Logger) (*digest.Notifier, error) {
	low, err := decimal.NewFromString(c.String("notify-low-percent"))
	if err != nil {
		return nil, usageError{fmt.Sprintf("--notify-low-percent %q: %v", c.String("notify-low-percent"), err)}
	}
	n := &digest.Notifier{Ledger: l, Log: log, Senders: map[digest.Channel]digest.Sender{},
		Rules: digest.Rules{LowPercent: low, RunwayDays: c.Int("notify-runway-days"), EndingDays: c.Int("notify-ending-days"),
			Period: c.Duration("notify-period"), Repeat: c.Duration("notify-repeat")},
		Admins: c.StringSlice("notify-admin"), AdminWebhook: c.String("notify-admin-webhook"),
		Attempts: c.Int("notify-attempts"), Backoff: c.Duration("notify-retry-wait")}
	if addr := c.String("smtp-server"); addr != "" {
		m, err := mailer(c, addr)
		if err != nil {
			return nil, err
		}
		n.Senders[digest.Email] = m
	}
	if path := c.String("webhook-secret-file"); path != "" {
		secret, err := auth.ReadSecretFile(path)
		if err != nil {
			return nil, fmt.Errorf("--webhook-secret-file: %w", err)
		}
		if secret = []byte(strings.TrimSpace(string(secret))); len(secret) < 16 {
			return nil, usageError{fmt.Sprintf("--webhook-secret-file %s: the secret has %d bytes; want 16 or more", path, len(secret))}
		}
		n.Senders[digest.Webhook] = &digest.Webhooks{Secret: secret}
	}
	if len(n.Senders) == 0 {
		return nil, nil
	}
	return n, nil
}

// mailer is the SMTP settings of c.
func mailer(c *cli.Context, addr string) (*digest.Mailer, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("smtp: this host's name, for EHLO: %w", err)
	}
	m := &digest.Mailer{Addr: addr, From: c.String("smtp-from"), Hello: host, Username: c.String("smtp-user"), Timeout: c.Duration("smtp-timeout")}
	if m.From == "" {
		m.From = "ingot@" + host
	}
	if path := c.String("smtp-password-file"); path != "" {
		pw, err := auth.ReadSecretFile(path)
		if err != nil {
			return nil, fmt.Errorf("--smtp-password-file: %w", err)
		}
		m.Password = strings.TrimRight(string(pw), "\r\n")
	}
	if path := c.String("smtp-ca-file"); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--smtp-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageError{fmt.Sprintf("--smtp-ca-file %s: no PEM certificate in it", path)}
		}
		host := addr
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			host = addr[:i]
		}
		m.TLS = &tls.Config{RootCAs: pool, ServerName: strings.Trim(host, "[]"), MinVersion: tls.VersionTLS12}
	}
	return m, nil
}

// errNoNotifier says how to set digests up.
var errNoNotifier = usageError{"no digest can be sent: give --smtp-server (email) or --webhook-secret-file (webhooks), or their keys in the config file (docs/notifications.md)"}

// Notify runs the digests on the bank file with this command's settings.
func (b localBank) Notify(ctx context.Context, dryRun bool) ([]digest.Digest, error) {
	n, err := notifier(b.cli, b.Ledger, slog.New(slog.NewTextHandler(b.cli.App.ErrWriter, nil)))
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, errNoNotifier
	}
	return n.Run(ctx, dryRun)
}

// runNotify sends the digests when it starts, then every day at the local
// time at (HH:MM), until ctx ends: a server that was down at that time
// sends what is due when it starts, and those told within the period are
// not told again.
func runNotify(ctx context.Context, n *digest.Notifier, at clock, log *slog.Logger) {
	next := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		ds, err := n.Run(ctx, false)
		sent := 0
		for _, d := range ds {
			if d.Sent {
				sent++
			}
		}
		if err != nil && ctx.Err() == nil {
			log.Error("digests", "sent", sent, "due", len(ds), "error", err.Error())
		} else {
			log.Info("digests", "sent", sent, "due", len(ds))
		}
		next = at.next(time.Now())
	}
}

// clock is a local time of day, HH:MM.
type clock struct{ hour, minute int }

func parseClock(s string) (clock, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return clock{}, usageError{fmt.Sprintf("--notify-at %q: want HH:MM, a local time of day", s)}
	}
	return clock{t.Hour(), t.Minute()}, nil
}

// next is the first time after now at the clock's time of day.
func (c clock) next(now time.Time) time.Time {
	t := time.Date(now.Year(), now.Month(), now.Day(), c.hour, c.minute, 0, 0, time.Local)
	if !t.After(now) {
		t = time.Date(now.Year(), now.Month(), now.Day()+1, c.hour, c.minute, 0, 0, time.Local)
	}
	return t
}
