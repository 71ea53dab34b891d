package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/munge"
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
		Description: "Holds the database file while it runs. Requests are signed with client keys (ingot client add),\n" +
			"carry a MUNGE credential (with --munge: the local account of its uid names the bank user), or come\n" +
			"on the --socket without either: root and the server's own user are admin there, any other user\n" +
			"acts as the bank user of their account. Logs are JSON lines on standard error. On SIGINT or\n" +
			"SIGTERM it finishes the requests in flight (at most " + shutdownTimeout.String() + ") and closes the bank.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", EnvVars: []string{"INGOT_LISTEN"}, Usage: "`ADDRESS` to listen on (host:port; port 0 picks a free one)"},
			&cli.StringFlag{Name: "socket", EnvVars: []string{"INGOT_SOCKET"}, Usage: "also listen on a Unix socket at `PATH` (mode 0666), where local users need no key"},
			&cli.BoolFlag{Name: "munge", EnvVars: []string{"INGOT_MUNGE"}, Usage: "accept MUNGE credentials (checked with unmunge)"},
			&cli.StringFlag{Name: "munge-socket", EnvVars: []string{"INGOT_MUNGE_SOCKET"}, Usage: "munged's socket `PATH` for unmunge -S (default: unmunge's)"},
			serverKeyFlag(),
		},
		Action: serve,
	}}
}

func serve(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	if c.String("munge-socket") != "" && !c.Bool("munge") {
		return usageError{"serve: --munge-socket goes with --munge, which accepts MUNGE credentials"}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(c.App.ErrWriter, nil))
	return withBank(c, func(l *ledger.Ledger) error {
		reg, err := openClients(c, l, false)
		if err != nil {
			return err
		}
		verifier := &auth.Verifier{Lookup: server.KeyLookup(reg)}
		var opts []server.Option
		if c.Bool("munge") {
			// Fail at start rather than at the first user's request.
			if _, err := exec.LookPath("unmunge"); err != nil {
				return fmt.Errorf("serve: --munge: %w (Debian: apt-get install munge)", err)
			}
			opts = append(opts, server.WithMunge(&munge.Verifier{Command: munge.Command{Socket: c.String("munge-socket")}}))
		}
		handler := server.New(l, lien.New(l), reg, verifier, log, opts...)
		ln, err := net.Listen("tcp", c.String("listen"))
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		listeners := []net.Listener{ln}
		fmt.Fprintf(c.App.Writer, "listening on http://%s\n", ln.Addr())
		log.Info("serving", "address", ln.Addr().String(), "munge", c.Bool("munge"))
		if path := c.String("socket"); path != "" {
			sock, err := listenUnix(path)
			if err != nil {
				ln.Close()
				return fmt.Errorf("serve: --socket: %w", err)
			}
			listeners = append(listeners, sock)
			fmt.Fprintf(c.App.Writer, "listening on unix socket %s\n", path)
			log.Info("serving", "socket", path)
		}
		return serveUntil(ctx, listeners, handler, log)
	})
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

// serveUntil serves h on the listeners until ctx is done, then shuts down
// gracefully: no new connections, and the requests in flight get
// shutdownTimeout to finish before their connections are closed.
func serveUntil(ctx context.Context, listeners []net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ConnContext:       server.ConnContext, // the uid of a Unix socket's peer
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, len(listeners))
	for _, ln := range listeners {
		go func() { served <- srv.Serve(ln) }()
	}
	select {
	case err := <-served:
		srv.Close()
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
	for range listeners {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	log.Info("stopped")
	return nil
}
