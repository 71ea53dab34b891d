package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

func newTestCA(t testing.TB, dir string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, "ca.pem")}
	writePEM(t, ca.file, "CERTIFICATE", der, 0o644)
	return ca
}

// issue makes a server certificate for ip or name, valid from notBefore to
// notAfter, and writes it and its key to dir/NAME.pem and dir/NAME.key.
func (ca *testCA) issue(t testing.TB, dir, file string, serial int64, ip net.IP, name string, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "ingot test"},
		NotBefore: notBefore, NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	if name != "" {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, file+".pem"), filepath.Join(dir, file+".key")
	writePEM(t, certFile, "CERTIFICATE", der, 0o644)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER, 0o600)
	return certFile, keyFile
}

func writePEM(t testing.TB, path, kind string, der []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
}

// TestTLS serves a bank over HTTPS with a certificate made by a test CA:
// the CLI reaches it with --ca-file; a plain HTTP request to the port is
// refused clearly; certificates for another name, expired, or from an
// unknown authority are refused by the client with a clear message; and
// SIGHUP takes up a new certificate while requests go on.
func TestTLS(t *testing.T) {
	b := newServedBank(t)
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	now := time.Now()
	loopback := net.ParseIP("127.0.0.1")
	certFile, keyFile := ca.issue(t, dir, "server", 2, loopback, "", now.Add(-time.Hour), now.Add(time.Hour))
	srv := startServer(t, b.db, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(srv.url, "https://") {
		t.Fatalf("the server says it listens on %s, want https", srv.url)
	}
	keyFileOf := filepath.Join(dir, "root.key")
	if err := os.WriteFile(keyFileOf, b.admin.KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(extra ...string) (string, int) {
		args := append([]string{"ingot", "--server", srv.url, "--key-file", keyFileOf}, extra...)
		var out strings.Builder
		code := run(append(args, "balance", "chem"), &out, &out)
		return out.String(), code
	}
	if out, code := cli("--ca-file", ca.file); code != exitOK || !strings.Contains(out, "chem") {
		t.Fatalf("balance over https with the CA: exit %d\n%s", code, out)
	}
	if out, code := cli(); code != exitUnavailable || !strings.Contains(out, "certificate signed by unknown authority") {
		t.Errorf("balance over https without the CA: exit %d\n%s", code, out)
	}
	// HSTS, and TLS 1.2 with AEAD suites only.
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certPool(t, ca.file)}}}
	resp, err := https.Get(srv.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security over HTTPS: %q", got)
	}
	for _, tc := range []struct {
		suite uint16
		ok    bool
	}{
		{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, false},
		{tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, false},
		{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, true},
		{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, true},
	} {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(srv.url, "https://"),
			&tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tc.suite}})
		if err == nil {
			conn.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("TLS 1.2 with %s only: %v; want accepted %v", tls.CipherSuiteName(tc.suite), err, tc.ok)
		}
	}

	// Plain HTTP to the TLS port.
	plain := "http://" + strings.TrimPrefix(srv.url, "https://")
	resp, err = http.Get(plain + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTP request to an HTTPS server") {
		t.Errorf("plain HTTP to the TLS port: %d %s", resp.StatusCode, body)
	}

	// A renewed certificate, taken up on SIGHUP while a client keeps
	// asking: no request fails, and new connections get the new one.
	install := func(c, k string) {
		t.Helper()
		for _, f := range [][2]string{{c, certFile}, {k, keyFile}} {
			raw, _ := os.ReadFile(f[0])
			if err := os.WriteFile(f[1], raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	served := func() int64 {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(srv.url, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var failed []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if out, code := cli("--ca-file", ca.file); code != exitOK {
				failed = append(failed, out)
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	install(ca.issue(t, dir, "renewed", 5, loopback, "", now.Add(-time.Hour), now.Add(2*time.Hour)))
	for deadline := time.Now().Add(10 * time.Second); served() != 5; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate is not served 10 s after SIGHUP")
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("a request failed across the reload: %q", failed)
	}

	// Certificates the client must refuse.
	for _, tc := range []struct {
		name, says string
		serial     int64
		issue      func() (string, string)
	}{
		{"another name", "cannot validate certificate for 127.0.0.1", 3, func() (string, string) {
			return ca.issue(t, dir, "other", 3, nil, "other.example", now.Add(-time.Hour), now.Add(time.Hour))
		}},
		{"expired", "certificate has expired", 4, func() (string, string) {
			return ca.issue(t, dir, "expired", 4, loopback, "", now.Add(-2*time.Hour), now.Add(-time.Hour))
		}},
	} {
		install(tc.issue())
		for deadline := time.Now().Add(10 * time.Second); served() != tc.serial; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not served 10 s after SIGHUP", tc.name)
			}
		}
		if out, code := cli("--ca-file", ca.file); code != exitUnavailable || !strings.Contains(out, tc.says) {
			t.Errorf("%s: exit %d\n%s", tc.name, code, out)
		}
	}
}

// certPool is a pool of the PEM certificates in file.
func certPool(t testing.TB, file string) *x509.CertPool {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		t.Fatalf("no certificate in %s", file)
	}
	return pool
}

// TestTLSKeyOfAnotherUser: serve refuses a TLS key that another user owns,
// whatever its mode, as it refuses one open to others: either may have
// been read or replaced. Giving a file away needs root.
func TestTLSKeyOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatal("under INGOT_E2E=1 this test runs as root, to give a file to another user")
		}
		t.Skip("needs root, to give a file to another user")
	}
	b := newCLIBank(t)
	b.clientKey("root", "--role", "admin")
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	certFile, keyFile := ca.issue(t, dir, "server", 2, net.ParseIP("127.0.0.1"), "", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err := os.Chown(keyFile, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	serveRefused(t, exitError, "owned by uid 65534", "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	if err := os.Chown(keyFile, 0, 0); err != nil {
		t.Fatal(err)
	}
	os.Chmod(keyFile, 0o640)
	serveRefused(t, exitError, "is open to group or others (mode 0640)", "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
}
