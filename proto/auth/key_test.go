package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testSecret is the secret of the documented example: bytes 0 to 31.
var testSecret = func() (s [32]byte) {
	for i := range s {
		s[i] = byte(i)
	}
	return s
}()

const testSecretText = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"

var testKey = Key{ID: "sched-1", Secret: testSecret}

func TestValidateKeyID(t *testing.T) {
	for _, id := range []string{"a", "0", "sched-1", "Hpc.cluster_1-x", strings.Repeat("k", 64)} {
		if err := ValidateKeyID(id); err != nil {
			t.Errorf("ValidateKeyID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range []string{"", "-x", ".x", "_x", "a:b", "a b", "a/b", "a~b", "é", "a\n", strings.Repeat("k", 65)} {
		if err := ValidateKeyID(id); !errors.Is(err, ErrKeyID) {
			t.Errorf("ValidateKeyID(%q) = %v, want ErrKeyID", id, err)
		}
	}
}

func TestNewKey(t *testing.T) {
	a, err := NewKey("client-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKey("client-a")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "client-a" || a.Secret == b.Secret || a.Secret == [32]byte{} {
		t.Errorf("NewKey: %q, secrets equal %v or zero", a.ID, a.Secret == b.Secret)
	}
	if _, err := NewKey("bad id"); !errors.Is(err, ErrKeyID) {
		t.Errorf("NewKey(bad id) = %v, want ErrKeyID", err)
	}
}

func TestKeyFileRoundTrip(t *testing.T) {
	if got, want := string(testKey.KeyFile()), "sched-1:"+testSecretText+"\n"; got != want {
		t.Errorf("KeyFile = %q, want %q", got, want)
	}
	for range 100 {
		key, err := NewKey("k")
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseKeyFile(key.KeyFile())
		if err != nil || back != key {
			t.Fatalf("ParseKeyFile(KeyFile()) = %v, %v; want the key back", back, err)
		}
	}
}

func TestParseKeyFile(t *testing.T) {
	valid := "sched-1:" + testSecretText
	for _, tc := range []struct {
		name, data string
		want       string // a fragment of the error; "" for success
	}{
		{"no newline", valid, ""},
		{"newline", valid + "\n", ""},
		{"crlf", valid + "\r\n", ""},
		{"padding tolerated", valid + "=\n", ""},
		{"empty", "", "empty"},
		{"only newline", "\n", "empty"},
		{"two newlines", valid + "\n\n", "more than one line"},
		{"two lines", valid + "\nother:" + testSecretText + "\n", "more than one line"},
		{"bare cr", valid + "\r", "more than one line"},
		{"no colon", "sched-1" + testSecretText, "no ':'"},
		{"empty id", ":" + testSecretText, "invalid key id: empty"},
		{"bad id", "sched 1:" + testSecretText, "invalid key id"},
		{"leading space", " " + valid, "invalid key id"},
		{"trailing space", valid + " \n", "44 characters"},
		{"short secret", "sched-1:" + testSecretText[:42], "42 characters"},
		{"long secret", valid + "AAAA", "47 characters"},
		{"double padding", valid + "==", "45 characters"},
		{"standard alphabet", "k:" + strings.Repeat("+", 42) + "A", "base64url"},
		{"bad character", "k:" + strings.Repeat("A", 42) + "!", "not valid base64url"},
		{"non-zero trailing bits", "k:" + strings.Repeat("A", 42) + "B", "not valid base64url"},
		{"second colon", "k:" + testSecretText + ":x", "45 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParseKeyFile([]byte(tc.data))
			if tc.want == "" {
				if err != nil || key != testKey {
					t.Fatalf("ParseKeyFile = %v, %v; want the test key", key, err)
				}
				return
			}
			if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseKeyFile = %v; want ErrKeyFile saying %q", err, tc.want)
			}
			if len(tc.data) > 20 && strings.Contains(err.Error(), strings.Repeat("A", 20)) {
				t.Errorf("error %q quotes the secret", err)
			}
		})
	}
}

func TestKeyNeverPrintsSecret(t *testing.T) {
	var log strings.Builder
	// Without the time, which may contain "31" by chance.
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{ReplaceAttr: noTime})).Info("x", "key", testKey)
	for _, shown := range []string{
		fmt.Sprint(testKey), fmt.Sprintf("%v %s %+v %#v %q", testKey, testKey, testKey, testKey, testKey), log.String(),
	} {
		if !strings.Contains(shown, "sched-1") || strings.Contains(shown, "31") || strings.Contains(shown, testSecretText) {
			t.Errorf("printed key %q: want the id and no secret", shown)
		}
	}
}

// TestSecretFilesAreTheOwners: a key file its group or others may read or
// write is refused with how to fix it; the owner's alone is read.
func TestSecretFilesAreTheOwners(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602} {
		path := filepath.Join(dir, fmt.Sprintf("key-%o", mode))
		if err := os.WriteFile(path, testKey.KeyFile(), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		_, err := ReadSecretFile(path)
		if !errors.Is(err, ErrSecretFileMode) || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: %v, want ErrSecretFileMode saying chmod 600", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		path := filepath.Join(dir, fmt.Sprintf("ok-%o", mode))
		os.WriteFile(path, testKey.KeyFile(), 0o600)
		os.Chmod(path, mode)
		if raw, err := ReadSecretFile(path); err != nil || string(raw) != string(testKey.KeyFile()) {
			t.Errorf("mode %04o: %q %v", mode, raw, err)
		}
	}
}

// TestSecretFilesOwnedByAnother: a key file of mode 600 that another user
// owns is refused, saying whose it is; one the process's user owns, or
// root, is read. Changing a file's owner needs root.
func TestSecretFilesOwnedByAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("INGOT_E2E") == "1" {
			t.Fatal("under INGOT_E2E=1 this test runs as root, to give a file to another user")
		}
		t.Skip("needs root, to give a file to another user")
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, testKey.KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecretFile(path); err != nil {
		t.Fatalf("root's own key file: %v", err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := ReadSecretFile(path)
	if !errors.Is(err, ErrSecretFileOwner) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("a key file owned by nobody: %v, want ErrSecretFileOwner naming the owner", err)
	}
}
