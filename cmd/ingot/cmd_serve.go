package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/metrics"
	"github.com/ingot-hpc/ingot/proto/server"
)

// Timeouts of the HTTP server: a client that is slow to send its headers
// or body, or to read the answer, is cut off rather than hold a connection.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 2 * time.Minute
	// shutdownTimeout is how long a shutdown waits for requests in flight.
	shutdownTimeout = 30 * time.Second
)

func serveCommands() []*cli.Command {
	own := []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", EnvVars: []string{"INGOT_LISTEN"}, Usage: "`ADDRESS` to listen on (host:port; port 0 picks a free one)"},
		&cli.StringFlag{Name: "metrics-listen", EnvVars: []string{"INGOT_METRICS_LISTEN"},
			Usage: "serve " + metrics.Path + " on this `ADDRESS` instead of on --listen (one that only Prometheus reaches)"},
		&cli.GenericFlag{Name: "log-level", Value: &logLevel{slog.LevelInfo}, EnvVars: []string{"INGOT_LOG_LEVEL"}, Usage: "least `LEVEL` logged: debug, info, warn or error"},
		serverKeyFlag(),
	}
	// A config file may set serve's own flags and the bank's --db.
	fileKeys := []string{"db"}
	for _, f := range own {
		fileKeys = append(fileKeys, f.Names()[0])
	}
	return []*cli.Command{{
		Name:  "serve",
		Usage: "serve the HTTP API (endpoints: see package proto/api) until SIGINT or SIGTERM",
		Description: "Holds the database file while it runs. Requests are signed with client keys (ingot client add);\n" +
			"logs are JSON lines on standard error; Prometheus metrics are at " + metrics.Path + ". On SIGINT or SIGTERM it\n" +
			"finishes the requests in flight (at most " + shutdownTimeout.String() + ") and closes the bank.\n" +
			"Settings come from flags, then INGOT_* variables, then the --config file (docs/server.md).",
		Flags: append(own, &cli.StringFlag{Name: "config", EnvVars: []string{"INGOT_CONFIG"},
			Usage: "TOML `FILE` of settings, named as the flags: " + strings.Join(fileKeys, ", ")}),
		Action: func(c *cli.Context) error { return serve(c, fileKeys) },
	}}
}

func serve(c *cli.Context, fileKeys []string) error {
	if _, err := args(c); err != nil {
		return err
	}
	if err := applyConfig(c, fileKeys); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: c.Generic("log-level").(*logLevel).Level}))
	m := metrics.New()
	return withStore(c, boltstore.Options{OnCommit: m.ObserveCommit}, func(l *ledger.Ledger, store *boltstore.Store) error {
		m.CountLiens(store.ActiveLiens)
		reg, err := openClients(c, l, false)
		if err != nil {
			return err
		}
		verifier := &auth.Verifier{Lookup: server.KeyLookup(reg)}
		bank := server.New(l, lien.New(l), reg, verifier, log)
		servers, err := listen(c, log, m.Instrument(bank, bank.Endpoint), m.Handler(log))
		if err != nil {
			return err
		}
		return serveUntil(ctx, log, servers...)
	})
}

// listen opens --listen for the API and, unless --metrics-listen gives it
// a listener of its own, the metrics page.
func listen(c *cli.Context, log *slog.Logger, api, page http.Handler) ([]listening, error) {
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	servers := []listening{{ln, api}}
	if addr := c.String("metrics-listen"); addr == "" {
		servers[0].h = withMetrics(api, page)
	} else {
		mln, err := net.Listen("tcp", addr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("serve: metrics: %w", err)
		}
		servers = append(servers, listening{mln, withMetrics(http.NotFoundHandler(), page)})
		fmt.Fprintf(c.App.Writer, "metrics on http://%s%s\n", mln.Addr(), metrics.Path)
		log.Info("serving metrics", "address", mln.Addr().String())
	}
	fmt.Fprintf(c.App.Writer, "listening on http://%s\n", ln.Addr())
	log.Info("serving", "address", ln.Addr().String())
	return servers, nil
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

// listening is a listener and the handler that serves it.
type listening struct {
	ln net.Listener
	h  http.Handler
}

// serveUntil serves each listener until ctx is done, then shuts down
// gracefully: no new connections, and the requests in flight get
// shutdownTimeout to finish before their connections are closed. If one
// listener fails, the others are closed at once.
func serveUntil(ctx context.Context, log *slog.Logger, servers ...listening) error {
	srvs := make([]*http.Server, len(servers))
	served := make(chan error, len(servers))
	for i, s := range servers {
		srvs[i] = &http.Server{
			Handler:           s.h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
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
