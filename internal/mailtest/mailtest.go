package mailtest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// User and Password are the credentials the server accepts with AUTH
// PLAIN (over TLS only); a message sent with them is received with
// protocol esmtpsa (utf8esmtpsa where the client asked for SMTPUTF8) in
// its Received header, without them esmtps.
const (
	User     = "ingot"
	Password = "a test's password"
)

// Server is a running Exim.
type Server struct {
	// Addr is where it listens for SMTP, 127.0.0.1:PORT.
	Addr string
	// CAFile is the PEM certificate its STARTTLS presents (self-signed,
	// for 127.0.0.1): the CA to trust.
	CAFile string
	dir    string
}

// Message is a message delivered.
type Message struct {
	// To is the envelope's recipient.
	To      string
	Subject string
	Header  mail.Header
	Body    string
}

// exim is Debian's Exim, if installed.
func exim() (string, error) {
	if p, err := exec.LookPath("exim4"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/exim4"); err != nil {
		return "", fmt.Errorf("exim4 is not installed (apt-get install exim4-daemon-light): %w", err)
	}
	return "/usr/sbin/exim4", nil
}

// Start starts Exim for the test, stopped at its end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exim()
	if err != nil {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir, err := os.MkdirTemp("", "ingot-exim-") // Exim's user must reach it: not under a test's 0700 TempDir
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{dir: dir, CAFile: filepath.Join(dir, "cert.pem")}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := s.writeCertificate(); err != nil {
		t.Fatal(err)
	}
	owner := ""
	if os.Geteuid() == 0 {
		owner = "Debian-exim"
	}
	for _, d := range []string{"spool", "log", "mail"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := chown(filepath.Join(dir, d), owner); err != nil {
				t.Fatal(err)
			}
		}
	}
	conf := filepath.Join(dir, "exim.conf")
	if err := os.WriteFile(conf, []byte(s.config(port, owner)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-C", conf, "-bdf", "-q30s")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start exim: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("exim ended at start:\n%s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("exim does not listen on %s:\n%s", s.Addr, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// config is Exim's configuration: listen on port of 127.0.0.1 only, no
// DNS, ident or verification, STARTTLS with the test's certificate, AUTH
// PLAIN with User and Password once in TLS (optional), and every
// recipient delivered to the maildir (as user owner, if set).
func (s *Server) config(port int, owner string) string {
	as := ""
	if owner != "" {
		as = "  user = " + owner + "\n  group = " + owner + "\n"
	}
	return fmt.Sprintf(`primary_hostname = ingot.test
spool_directory = %[1]s/spool
log_file_path = %[1]s/log/%%slog
pid_file_path = %[1]s/exim.pid
daemon_smtp_ports = %[2]d
local_interfaces = 127.0.0.1
host_lookup =
rfc1413_hosts =
tls_advertise_hosts = *
tls_certificate = %[1]s/cert.pem
tls_privatekey = %[1]s/key.pem
acl_smtp_rcpt = accept
begin authenticators
plain:
  driver = plaintext
  public_name = PLAIN
  server_prompts = :
  server_condition = ${if and {{eq{$auth2}{%[4]s}}{eq{$auth3}{%[5]s}}}}
  server_set_id = $auth2
  server_advertise_condition = ${if def:tls_in_cipher}
begin routers
all:
  driver = accept
  transport = maildir
begin transports
maildir:
  driver = appendfile
  directory = %[1]s/mail
  maildir_format
  create_directory
  envelope_to_add
%[3]sbegin retry
* * F,1m,1m
`, s.dir, port, as, User, Password)
}

// Messages are the messages delivered so far, in no order.
func (s *Server) Messages(t testing.TB) []Message {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.dir, "mail", "new", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	for _, f := range files {
		raw, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mail.ReadMessage(bufio.NewReader(raw))
		if err != nil {
			raw.Close()
			t.Fatalf("message %s: %v", f, err)
		}
		body, err := io.ReadAll(m.Body)
		raw.Close()
		if err != nil {
			t.Fatal(err)
		}
		subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
		if err != nil {
			t.Fatalf("message %s: subject: %v", f, err)
		}
		out = append(out, Message{To: m.Header.Get("Envelope-to"), Subject: subject, Header: m.Header, Body: strings.ReplaceAll(string(body), "\r\n", "\n")})
	}
	slices.SortFunc(out, func(a, b Message) int { return strings.Compare(a.To+a.Subject, b.To+b.Subject) })
	return out
}

// WaitMessages waits up to 10 seconds for n messages delivered, and
// returns them.
func (s *Server) WaitMessages(t testing.TB, n int) []Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms := s.Messages(t)
		if len(ms) >= n || time.Now().After(deadline) {
			if len(ms) != n {
				t.Fatalf("%d messages delivered, want %d; exim's log:\n%s", len(ms), n, s.Log())
			}
			return ms
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log is Exim's main log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log", "mainlog"))
	p, _ := os.ReadFile(filepath.Join(s.dir, "log", "paniclog"))
	return string(b) + string(p)
}

// writeCertificate writes a self-signed certificate for 127.0.0.1 and its
// key (readable by Exim's user: a test's throwaway key).
func (s *Server) writeCertificate() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o644)
}

// freePort is a loopback port free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func chown(path, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(path, uid, gid)
}
