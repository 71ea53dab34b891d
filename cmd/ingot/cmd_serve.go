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
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
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
	return []*cli.Command{{
		Name:  "serve",
		Usage: "serve the HTTP API (endpoints: see package proto/api) until SIGINT or SIGTERM",
		Description: "Holds the database file while it runs. Requests are signed with client keys (ingot client add);\n" +
			"logs are JSON lines on standard error. On SIGINT or SIGTERM it finishes the requests in flight\n" +
			"(at most " + shutdownTimeout.String() + ") and closes the bank.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", EnvVars: []string{"INGOT_LISTEN"}, Usage: "`ADDRESS` to listen on (host:port; port 0 picks a free one)"},
			serverKeyFlag(),
		},
		Action: localOnly(serve),
	}}
}

func serve(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(c.App.ErrWriter, nil))
	return withLocalBank(c, func(l *ledger.Ledger) error {
		reg, err := openClients(c, l, false)
		if err != nil {
			return err
		}
		verifier := &auth.Verifier{Lookup: server.KeyLookup(reg)}
		handler := server.New(l, lien.New(l), reg, verifier, log)
		ln, err := net.Listen("tcp", c.String("listen"))
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		fmt.Fprintf(c.App.Writer, "listening on http://%s\n", ln.Addr())
		log.Info("serving", "address", ln.Addr().String())
		return serveUntil(ctx, ln, handler, log)
	})
}

// serveUntil serves h on ln until ctx is done, then shuts down gracefully:
// no new connections, and the requests in flight get shutdownTimeout to
// finish before their connections are closed.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err) // Serve never returns nil
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight", "timeout", shutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}
