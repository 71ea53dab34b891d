package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/gold"
	"github.com/ingot-hpc/ingot/proto/metrics"
	"github.com/ingot-hpc/ingot/proto/munge"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
	"github.com/ingot-hpc/ingot/proto/server"
	"github.com/ingot-hpc/ingot/proto/web"
	"github.com/ingot-hpc/ingot/schedule"
)

// httpTimeouts are the HTTP server's: a client that is slow to send its
// headers or body, or to read the answer, is cut off rather than hold a
// connection. A body that does not arrive in time is answered 400 with
// the API's JSON error; headers that do not arrive in time get net/http's
// own plain-text 400 (no request reached the API), and the connection is
// closed.
type httpTimeouts struct {
	readHeader, read, write, idle time.Duration
}

// timeouts are serve's; tests shorten them.
var timeouts = httpTimeouts{readHeader: 5 * time.Second, read: 30 * time.Second, write: 60 * time.Second, idle: 2 * time.Minute}

// shutdownTimeout is how long a shutdown waits for requests in flight.
const shutdownTimeout = 30 * time.Second

// serveFlags are serve's own flags, which its config file may set too.
func serveFlags() []cli.Flag {
	own := []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", EnvVars: []string{"INGOT_LISTEN"}, Usage: "`ADDRESS` to listen on (host:port; port 0 picks a free one)"},
		&cli.StringFlag{Name: "metrics-listen", EnvVars: []string{"INGOT_METRICS_LISTEN"},
			Usage: "serve " + metrics.Path + " on this `ADDRESS` instead of on --listen (one that only Prometheus reaches)"},
		&cli.StringFlag{Name: "socket", EnvVars: []string{"INGOT_SOCKET"}, Usage: "also listen on a Unix socket at `PATH` (mode 0666), where local users need no key"},
		&cli.StringFlag{Name: "gold-listen", EnvVars: []string{"INGOT_GOLD_LISTEN"},
			Usage: "also serve Gold's SSSRMAP3 protocol on this `ADDRESS` (Gold's port is 7112), for Gold's clients and Maui or Moab (docs/gold.md)"},
		&cli.BoolFlag{Name: "munge", EnvVars: []string{"INGOT_MUNGE"}, Usage: "accept MUNGE credentials (checked with unmunge)"},
		&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"INGOT_TLS_CERT"}, Usage: "serve --listen over HTTPS (TLS 1.2 or later) with the certificate chain in PEM `FILE`; reloaded on SIGHUP"},
		&cli.StringFlag{Name: "tls-key", EnvVars: []string{"INGOT_TLS_KEY"}, Usage: "the private key of --tls-cert, in PEM `FILE` (mode 600)"},
		&cli.StringFlag{Name: "first-admin-key", EnvVars: []string{"INGOT_FIRST_ADMIN_KEY"},
			Usage: "on a bank with no API clients yet, add client admin (role admin) and write its key to `FILE` (make run does)"},
		&cli.DurationFlag{Name: "request-retention", Value: ledger.RequestRetention, EnvVars: []string{"INGOT_REQUEST_RETENTION"},
			Usage: "keep the answer to a change for its retries this `LONG`, at least 1h (a request id used again after it is a new request); pruned hourly"},
		&cli.DurationFlag{Name: "usage-report-period", Value: peer.DefaultReportPeriod, EnvVars: []string{"INGOT_USAGE_REPORT_PERIOD"},
			Usage: "report the usage of the allocations peers granted here to them every `LONG` (whole seconds dividing a day: 24h, 1h, 5s), " +
				"each period ending on its multiple of LONG since UTC midnight (docs/multi-site.md)"},
		&cli.StringFlag{Name: "web-url", EnvVars: []string{"INGOT_WEB_URL"},
			Usage: "the `URL` browsers reach the web page at (https://bank.example.org), which ingot web-login's links start with; default: --listen's address (this host's name where it listens on every address)"},
		&cli.GenericFlag{Name: "log-level", Value: &logLevel{slog.LevelInfo}, EnvVars: []string{"INGOT_LOG_LEVEL"}, Usage: "least `LEVEL` logged: debug, info, warn or error"},
		serverKeyFlag(),
		&cli.StringFlag{Name: "notify-at", EnvVars: []string{"INGOT_NOTIFY_AT"},
			Usage: "send the digests (ingot notify) when the server starts and every day at `HH:MM`, local time (docs/notifications.md)"},
	}
	return append(own, notifyFlags()...)
}

// serveFileKeys are the keys of serve's config file: its own flags, the
// bank's --db or --store and munged's socket.
func serveFileKeys() []string {
	keys := []string{"db", "store", "munge-socket"}
	for _, f := range serveFlags() {
		keys = append(keys, f.Names()[0])
	}
	return keys
}

func serveCommands() []*cli.Command {
	own, fileKeys := serveFlags(), serveFileKeys()
	return []*cli.Command{{
		Name:  "serve",
		Usage: "serve the HTTP API (endpoints: see package proto/api) and the web page until SIGINT or SIGTERM",
		Description: "Holds the database file while it runs. Requests are signed with client keys (ingot client add),\n" +
			"carry a MUNGE credential (with --munge: the local account of its uid names the bank user), or come\n" +
			"on the --socket without either: root and the server's own user are admin there, any other user\n" +
			"acts as the bank user of their account. Logs are JSON lines on standard error; Prometheus metrics\n" +
			"are at " + metrics.Path + ". The read-only web page is at / on --listen (ingot web-login prints a link that signs\n" +
			"in; docs/web.md). On SIGINT or SIGTERM it finishes the requests in flight (at most " + shutdownTimeout.String() + ")\n" +
			"and closes the bank.\n" +
			"Settings come from flags, then INGOT_* variables, then the --config file (docs/server.md).",
		Flags: append(own, &cli.StringFlag{Name: "config", EnvVars: []string{"INGOT_CONFIG"},
			Usage: "TOML `FILE` of settings, named as the flags: " + strings.Join(fileKeys, ", ")}),
		Action: localOnly(func(c *cli.Context) error { return serve(c, fileKeys) }),
	}}
}

func serve(c *cli.Context, fileKeys []string) error {
	if _, err := args(c); err != nil {
		return err
	}
	if err := applyConfig(c, fileKeys, nil); err != nil {
		return err
	}
	if r := c.Duration("request-retention"); r < ledger.MinRequestRetention {
		return usageError{fmt.Sprintf("serve: --request-retention %s is shorter than %s: a signed change captured on the way could be "+
			"applied again after a restart, once its answer is pruned (the answers kept are what stops a replay then)", r, ledger.MinRequestRetention)}
	}
	if err := peer.CheckReportPeriod(c.Duration("usage-report-period")); err != nil {
		return usageError{fmt.Sprintf("serve: --usage-report-period: %v", err)}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := newBufferedLog(c.App.ErrWriter)
	defer out.Close()
	log := slog.New(flushingHandler{slog.NewJSONHandler(out, &slog.HandlerOptions{Level: c.Generic("log-level").(*logLevel).Level}), out})
	m := metrics.New()
	upgraded := func(from, to uint64, backup string) {
		if backup == "" { // PostgreSQL's: one transaction, no copy
			log.Info("upgraded the bank", "from schema", from, "to schema", to)
			return
		}
		log.Info("upgraded the bank", "db", flagString(c, "db"), "from schema", from, "to schema", to, "the file as it was", backup)
	}
	// Its standard error is the JSON log, where the upgrade is logged
	// once done: no progress lines there.
	noProgress := func(string, int64, int64) {}
	return withStore(c, boltstore.Options{OnCommit: m.ObserveCommit, OnUpgrade: upgraded, OnUpgradeProgress: noProgress}, func(l *ledger.Ledger, store ledger.Store) error {
		m.CountLiens(func() (int, error) { return l.OpenLiens(ctx) })
		if _, ok := store.(*boltstore.Store); ok {
			m.WatchFilesystem(filepath.Dir(flagString(c, "db"))) // the alert on a filling disk watches it
		}
		firstAdminKey := c.String("first-admin-key")
		// The server key is made only with the first admin's key: a server
		// started with a mistyped --server-key must stop, not seal anew.
		reg, err := openClients(c, l, firstAdminKey != "")
		if err != nil {
			return err
		}
		if firstAdminKey != "" {
			if err := addFirstAdmin(c, reg, firstAdminKey); err != nil {
				return err
			}
		}
		verifier := &auth.Verifier{Lookup: server.KeyLookup(reg)}
		opts := []server.Option{server.WithObserver(m.ObserveRequest)}
		if c.Bool("munge") {
			// Fail at start rather than at the first user's request.
			if _, err := exec.LookPath("unmunge"); err != nil {
				return fmt.Errorf("serve: --munge: %w (Debian: apt-get install munge)", err)
			}
			opts = append(opts, server.WithMunge(&munge.Verifier{Command: munge.Command{Socket: flagString(c, "munge-socket")}}))
		}
		ln, scheme, err := listenAPI(c, log)
		if err != nil {
			return err
		}
		sessions, webURL, err := webSessions(c, ln, scheme)
		if err != nil {
			ln.Close()
			return err
		}
		opts = append(opts, server.WithPage(web.New(sessions, log)))
		n, err := notifier(c, l, log)
		if err != nil {
			ln.Close()
			return err
		}
		var at *clock
		if s := c.String("notify-at"); s != "" {
			if n == nil {
				ln.Close()
				return fmt.Errorf("serve: --notify-at: %w", errNoNotifier)
			}
			t, err := parseClock(s)
			if err != nil {
				ln.Close()
				return err
			}
			at = &t
		}
		if n != nil {
			opts = append(opts, server.WithNotifier(n))
		}
		bank := server.New(l, lien.New(l), reg, verifier, log, opts...)
		servers, err := listen(c, log, ln, scheme, bank, m.Handler(log))
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "web page at %s/ (ingot web-login prints a link that signs in)\n", webURL)
		log.Info("serving the web page", "url", webURL)
		// The pruner, the schedules' runner, the peers' outbox and the
		// digests end before the store closes (when this returns), so that
		// they never work on, or log about, a closed store.
		pruneCtx, stopPruning := context.WithCancel(ctx)
		var pruning sync.WaitGroup
		pruning.Go(func() { pruneRequests(pruneCtx, l, log, c.Duration("request-retention")) })
		pruning.Go(func() { runSchedules(pruneCtx, schedule.New(l), log) })
		// The server's own peers: the answers its traceback keeps are the
		// outbox's to journal (peer.Registry.Answered).
		pruning.Go(func() {
			(&outbox.Outbox{Peers: bank.Peers(), Log: log, ReportPeriod: c.Duration("usage-report-period")}).Run(pruneCtx)
		})
		if at != nil {
			pruning.Go(func() { runNotify(pruneCtx, n, *at, log) })
		}
		defer func() {
			stopPruning()
			pruning.Wait()
		}()
		if addr := c.String("gold-listen"); addr != "" {
			gln, err := net.Listen("tcp", addr)
			if err != nil {
				closeAll(servers)
				return fmt.Errorf("serve: --gold-listen: %w", err)
			}
			servers = append(servers, listening{ln: gln, srv: &gold.Server{Handler: &gold.Bank{API: bank, Keys: reg, Log: log}, Log: log,
				ReadTimeout: timeouts.read, WriteTimeout: timeouts.write}})
			fmt.Fprintf(c.App.Writer, "gold listening on %s\n", gln.Addr())
			log.Info("serving gold", "address", gln.Addr().String())
		}
		if err := notifySystemd("READY=1"); err != nil {
			log.Warn("telling systemd the server is ready", "error", err.Error())
		}
		return serveUntil(ctx, log, servers...)
	})
}

// addFirstAdmin gives a bank with no API clients its first admin, whose
// key goes to path and, once, to standard output. A bank that has clients
// already is left alone.
func addFirstAdmin(c *cli.Context, reg *clients.Registry, path string) error {
	existing, err := reg.List(c.Context)
	if err != nil || len(existing) > 0 {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("serve: --first-admin-key %s exists, but this bank has no clients: it holds the key of another bank; move it away", path)
	}
	// The file is made first: a path that cannot be written stops the
	// start before an admin nobody has the key of is made.
	admin, key, err := makeKeyFile(path, func() (clients.Client, auth.Key, error) {
		return reg.Add(c.Context, request(c), clients.Spec{Name: "admin", Role: clients.RoleAdmin})
	})
	if err != nil {
		return fmt.Errorf("serve: first admin: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "first start: made API client %s (role %s); its key, also in %s, is shown once:\n%s", admin.Name, admin.Role, path, key.KeyFile())
	return nil
}

// listenAPI opens --listen, over TLS with --tls-cert, and says which
// scheme it serves.
func listenAPI(c *cli.Context, log *slog.Logger) (net.Listener, string, error) {
	var cert *certificate
	switch certFile, keyFile := c.String("tls-cert"), c.String("tls-key"); {
	case (certFile == "") != (keyFile == ""):
		return nil, "", usageError{"serve: --tls-cert and --tls-key go together"}
	case certFile != "":
		var err error
		if cert, err = loadCertificate(certFile, keyFile); err != nil {
			return nil, "", err
		}
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return nil, "", fmt.Errorf("serve: %w", err)
	}
	if cert == nil {
		return ln, "http", nil
	}
	go cert.reloadOnHangup(log, c.Context.Done())
	return tls.NewListener(ln, cert.config()), "https", nil
}

// webSessions keeps the web page's sign-in links and sessions. The links
// start with --web-url, or else with the address ln listens on; where that
// is every address (0.0.0.0, ::), with this host's name.
func webSessions(c *cli.Context, ln net.Listener, scheme string) (*web.Sessions, string, error) {
	base := strings.TrimSuffix(c.String("web-url"), "/")
	if base == "" {
		host, port, err := net.SplitHostPort(ln.Addr().String())
		if err != nil {
			return nil, "", fmt.Errorf("serve: the web page's address: %w", err)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if host, err = os.Hostname(); err != nil {
				return nil, "", fmt.Errorf("serve: the web page's address: this host's name: %w (give --web-url)", err)
			}
		}
		base = scheme + "://" + net.JoinHostPort(host, port)
	}
	sessions, err := web.NewSessions(base, nil)
	if err != nil {
		return nil, "", usageError{fmt.Sprintf("serve: --web-url: %v", err)}
	}
	return sessions, base, nil
}

// listen serves the API on ln, the listener of --listen, and, unless
// --metrics-listen gives it a listener of its own, the metrics page.
func listen(c *cli.Context, log *slog.Logger, ln net.Listener, scheme string, api, page http.Handler) ([]listening, error) {
	servers := []listening{{ln: ln, h: withHSTS(api)}}
	if addr := c.String("metrics-listen"); addr == "" {
		servers[0].h = withHSTS(withMetrics(api, page))
	} else {
		mln, err := net.Listen("tcp", addr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("serve: metrics: %w", err)
		}
		servers = append(servers, listening{ln: mln, h: withMetrics(http.NotFoundHandler(), page)})
		fmt.Fprintf(c.App.Writer, "metrics on http://%s%s\n", mln.Addr(), metrics.Path)
		log.Info("serving metrics", "address", mln.Addr().String())
	}
	fmt.Fprintf(c.App.Writer, "listening on %s://%s\n", scheme, ln.Addr())
	log.Info("serving", "address", ln.Addr().String(), "scheme", scheme, "munge", c.Bool("munge"))
	if path := c.String("socket"); path != "" {
		sock, err := listenUnix(path)
		if err != nil {
			closeAll(servers)
			return nil, fmt.Errorf("serve: --socket: %w", err)
		}
		servers = append(servers, listening{ln: sock, h: servers[0].h})
		fmt.Fprintf(c.App.Writer, "listening on unix socket %s\n", path)
		log.Info("serving", "socket", path)
	}
	return servers, nil
}

// withHSTS tells browsers that reach the page over HTTPS to use nothing
// else for a year (HSTS, RFC 6797), so that a later link typed as http://
// cannot be taken over on the path. Plain HTTP and the socket are left
// alone: the header means nothing there.
func withHSTS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		h.ServeHTTP(w, r)
	})
}

// withMetrics serves the metrics page at metrics.Path and everything else
// with h. The page is not counted in the request metrics nor logged: a
// scrape every few seconds would drown the figures of the API.
func withMetrics(h, page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == metrics.Path {
			page.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// listening is a listener and the handler that serves it over HTTP, or
// the server of another protocol (srv).
type listening struct {
	ln  net.Listener
	h   http.Handler
	srv servable
}

// servable is what serveUntil runs: an *http.Server, or another
// protocol's server with the same methods (package gold's).
type servable interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

func closeAll(servers []listening) {
	for _, s := range servers {
		s.ln.Close()
	}
}

// serveUntil serves each listener until ctx is done, then shuts down
// gracefully: no new connections, and the requests in flight get
// shutdownTimeout to finish before their connections are closed. If one
// listener fails, the others are closed at once.
func serveUntil(ctx context.Context, log *slog.Logger, servers ...listening) error {
	srvs := make([]servable, len(servers))
	served := make(chan error, len(servers))
	for i, s := range servers {
		srvs[i] = s.srv
		if s.srv == nil {
			srvs[i] = &http.Server{
				Handler:           s.h,
				ConnContext:       server.ConnContext, // the uid of a Unix socket's peer
				ReadHeaderTimeout: timeouts.readHeader,
				ReadTimeout:       timeouts.read,
				WriteTimeout:      timeouts.write,
				IdleTimeout:       timeouts.idle,
				ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			}
		}
		go func() { served <- srvs[i].Serve(s.ln) }()
	}
	select {
	case err := <-served:
		for _, srv := range srvs {
			srv.Close()
		}
		return fmt.Errorf("serve: %w", err) // Serve never returns nil
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight", "timeout", shutdownTimeout.String())
	if err := notifySystemd("STOPPING=1"); err != nil {
		log.Warn("telling systemd the server is stopping", "error", err.Error())
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var errs []error
	for _, srv := range srvs {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			srv.Close()
			errs = append(errs, fmt.Errorf("serve: shutdown: %w", err))
		}
	}
	for range srvs {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// listenUnix listens on a Unix socket at path that every local user may
// connect to. A socket file left by a server that died is replaced; any
// other file, or a socket a server still answers on, is an error. The
// socket file is removed when the listener is closed.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
			conn.Close()
			return nil, fmt.Errorf("another server answers on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Who may do what is decided per request, by the peer's uid.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// runSchedules makes the allocation schedules' periods that are due, at
// start and every minute, until ctx ends: a server that was stopped at a
// boundary makes what it missed when it starts, and every server of a bank
// may run it (each period is made once; package schedule).
func runSchedules(ctx context.Context, s *schedule.Bank, log *slog.Logger) {
	for {
		made, err := s.Run(ctx)
		for _, p := range made {
			log.Info("allocation schedule: period made", "schedule", p.Schedule, "account", p.Account, "period", p.Index, "allocation", p.Allocation)
		}
		if err != nil && ctx.Err() == nil {
			log.Error("allocation schedules", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
	}
}

// pruneRequests drops the answers kept for retries once older than
// retention, at start and every hour, until ctx ends.
func pruneRequests(ctx context.Context, l *ledger.Ledger, log *slog.Logger, retention time.Duration) {
	for {
		const batch = 10000
		for {
			n, err := l.PruneRequests(ctx, l.Now().Add(-retention), batch)
			if err != nil {
				if ctx.Err() == nil {
					log.Error("pruning the answers kept for retries", "error", err.Error())
				}
				break
			}
			if n > 0 {
				log.Info("pruned the answers kept for retries", "requests", n, "older than", retention.String())
			}
			if n < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Hour):
		}
	}
}
