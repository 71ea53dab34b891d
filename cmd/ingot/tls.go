package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// certificate is the server's TLS certificate, loaded from its files at
// start and again on SIGHUP, so that a renewed certificate is taken up
// without a restart: connections made after the reload get the new one,
// those open keep theirs.
type certificate struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
}

func loadCertificate(certFile, keyFile string) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certificate) reload() error {
	if info, err := os.Stat(c.keyFile); err == nil && info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("serve: --tls-key %s is open to group or others (mode %04o); it holds a secret: chmod 600 %s", c.keyFile, info.Mode().Perm(), c.keyFile)
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("serve: TLS certificate: %w", err)
	}
	c.current.Store(&cert)
	return nil
}

// config is the server's TLS configuration: TLS 1.2 or later, the current
// certificate.
func (c *certificate) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.current.Load(), nil
		},
	}
}

// reloadOnHangup reloads the certificate at each SIGHUP until stop is
// closed; a certificate that does not load is logged and the one in use
// kept.
func (c *certificate) reloadOnHangup(log *slog.Logger, stop <-chan struct{}) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-stop:
			return
		case <-hup:
			if err := c.reload(); err != nil {
				log.Error("TLS certificate not reloaded; the one in use stays", "error", err.Error())
			} else {
				log.Info("TLS certificate reloaded", "cert", c.certFile)
			}
		}
	}
}
