package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/ingot-hpc/ingot/proto/auth"
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
	key, err := auth.ReadSecretFile(c.keyFile)
	if err != nil {
		return fmt.Errorf("serve: --tls-key: %w", err)
	}
	chain, err := os.ReadFile(c.certFile)
	if err != nil {
		return fmt.Errorf("serve: --tls-cert: %w", err)
	}
	cert, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return fmt.Errorf("serve: TLS certificate: %w", err)
	}
	c.current.Store(&cert)
	return nil
}

// aeadSuites are the TLS 1.2 cipher suites served: forward secrecy and
// authenticated encryption only. Go's defaults also offer the CBC suites
// with SHA-1 MACs, which TLS 1.2's own best practice (RFC 9325) no longer
// recommends; every client that speaks TLS 1.2 has one of these. TLS 1.3's
// suites are all AEAD and not configurable.
var aeadSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// config is the server's TLS configuration: TLS 1.2 with AEAD suites, or
// TLS 1.3; the current certificate.
func (c *certificate) config() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: aeadSuites,
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
