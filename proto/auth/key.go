package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Key is an API key: an id, sent with every request, and a 256-bit secret,
// never sent.
type Key struct {
	ID     string
	Secret [32]byte
}

const (
	maxKeyIDLen = 64
	// secretLen is the length of a 256-bit secret in unpadded base64url.
	secretLen = 43
)

// secretEncoding is unpadded base64url refusing non-zero trailing bits, so
// that a secret has exactly one spelling.
var secretEncoding = base64.RawURLEncoding.Strict()

// NewKey returns a key with the given id and a secret from crypto/rand.
func NewKey(id string) (Key, error) {
	if err := ValidateKeyID(id); err != nil {
		return Key{}, err
	}
	key := Key{ID: id}
	if _, err := rand.Read(key.Secret[:]); err != nil {
		return Key{}, fmt.Errorf("auth: generating a secret: %w", err)
	}
	return key, nil
}

// ValidateKeyID reports whether id is a valid key id: 1 to 64 characters
// from A-Z a-z 0-9 . _ -, the first a letter or a digit. The set is safe
// unquoted in a header, a file name, a shell word and the key file (no ':'),
// and the first character keeps ids from looking like command-line flags.
func ValidateKeyID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrKeyID)
	case len(id) > maxKeyIDLen:
		return fmt.Errorf("%w: %d characters, at most %d", ErrKeyID, len(id), maxKeyIDLen)
	case !isAlnum(id[0]):
		return fmt.Errorf("%w %q: must start with a letter or a digit", ErrKeyID, id)
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("%w %q: only A-Z a-z 0-9 . _ - are allowed", ErrKeyID, id)
		}
	}
	return nil
}

// ParseKeyFile parses a key file: one line "<key id>:<secret>", the secret
// being 32 bytes in base64url without padding (43 characters). One trailing
// "=" (the padding other encoders add) is tolerated, as is one trailing
// newline, "\n" or "\r\n"; nothing else is. Errors never quote the secret.
func ParseKeyFile(data []byte) (Key, error) {
	line, ok := bytes.CutSuffix(data, []byte("\n"))
	if ok {
		line, _ = bytes.CutSuffix(line, []byte("\r"))
	}
	if len(line) == 0 {
		return Key{}, fmt.Errorf("%w: empty; want one line <key id>:<secret as base64url>", ErrKeyFile)
	}
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		return Key{}, fmt.Errorf("%w: more than one line (line break at byte %d)", ErrKeyFile, i)
	}
	id, secret, ok := strings.Cut(string(line), ":")
	if !ok {
		return Key{}, fmt.Errorf("%w: no ':' between key id and secret; want <key id>:<secret as base64url>", ErrKeyFile)
	}
	if err := ValidateKeyID(id); err != nil {
		return Key{}, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	key := Key{ID: id}
	if err := decodeSecret(secret, &key.Secret); err != nil {
		return Key{}, fmt.Errorf("%w: key %q: %w", ErrKeyFile, id, err)
	}
	return key, nil
}

func decodeSecret(text string, secret *[32]byte) error {
	if len(text) == secretLen+1 {
		text = strings.TrimSuffix(text, "=")
	}
	if len(text) != secretLen {
		return fmt.Errorf("secret is %d characters; a 256-bit secret is %d base64url characters", len(text), secretLen)
	}
	if strings.ContainsAny(text, "+/") {
		return fmt.Errorf("secret uses '+' or '/': write it in base64url, with '-' and '_'")
	}
	// 43 characters decode to exactly 32 bytes; the error names only an
	// offset, never the secret itself.
	if _, err := secretEncoding.Decode(secret[:], []byte(text)); err != nil {
		return fmt.Errorf("secret is not valid base64url: %v", err)
	}
	return nil
}

// KeyFile returns the key file for k: "<key id>:<secret as unpadded
// base64url>\n". Write it with mode 0600.
func (k Key) KeyFile() []byte {
	return []byte(k.ID + ":" + k.SecretText() + "\n")
}

// SecretText is the secret as a key file spells it (unpadded base64url).
// It is also the key of the client on Gold's protocol, which has no key
// ids: Gold's auth_key file and Maui's CSKEY hold it, and its bytes are
// the HMAC-SHA1 key (package gold).
func (k Key) SecretText() string { return secretEncoding.EncodeToString(k.Secret[:]) }

// String, GoString and LogValue show only the id, so that printing or
// logging a key never leaks its secret.
func (k Key) String() string { return "key " + k.ID }

// GoString: see String.
func (k Key) GoString() string { return fmt.Sprintf("auth.Key{ID: %q, Secret: <redacted>}", k.ID) }

// LogValue: see String.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

func isAlnum(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// ReadSecretFile reads a file holding a secret (a key file, the server
// key, a TLS key), refusing one that its group or others may read or write,
// or that a user other than this process's (or root) owns: like an ssh
// private key, a secret is its owner's alone.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is open to group or others (mode %04o); it holds a secret: chmod 600 %s", ErrSecretFileMode, path, mode, path)
	}
	if err := checkOwner(path, info); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
