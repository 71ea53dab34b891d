package clients

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// Errors of this package.
var (
	ErrServerKey = errors.New("clients: server key")
	ErrRole      = fmt.Errorf("%w: clients: bad role or scope", ledger.ErrInvalid)
)

// Role is what a client may do.
type Role string

// The roles (DESIGN section 6).
const (
	RoleAdmin     Role = "admin"
	RoleManager   Role = "manager"   // of the nodes in Scope and their subtrees
	RoleScheduler Role = "scheduler" // of the machines in Scope
	RoleUser      Role = "user"      // acting as the one bank user in Scope
	// RolePeer is another bank (package peer): it may act only on the
	// projects in Scope, which its agreement names, and only through the
	// exchange's endpoints, so every other route refuses it.
	RolePeer Role = "peer"
)

// Key is a client's key as stored: the secret only sealed.
type Key struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Revoked time.Time `json:"revoked,omitzero"`
	// Sealed is the XChaCha20-Poly1305 nonce followed by the sealed secret,
	// with the client's name and the key id as additional data.
	Sealed []byte `json:"sealed,omitempty"`
}

// Client is an API client.
type Client struct {
	Name  string   `json:"name"`
	Role  Role     `json:"role"`
	Scope []string `json:"scope,omitempty"`
	// Gold says its keys also sign Gold's SSSRMAP messages (package gold).
	Gold    bool      `json:"gold,omitempty"`
	Created time.Time `json:"created"`
	Keys    []Key     `json:"keys"`
}

// Spec is a new client: its name, role and scope, and whether its keys
// also sign Gold's SSSRMAP messages. That protocol has HMAC-SHA1 and no
// date or nonce (a copied message can be sent again), so a client uses it
// only when made for it.
type Spec struct {
	Name  string   `json:"name"`
	Role  Role     `json:"role"`
	Scope []string `json:"scope,omitempty"`
	Gold  bool     `json:"gold,omitempty"`
}

// Public is the client as shown to people and over the wire: its keys
// without their sealed secrets, which only the server can use.
func (c Client) Public() Client {
	c.Keys = slices.Clone(c.Keys)
	for i := range c.Keys {
		c.Keys[i].Sealed = nil
	}
	return c
}

// Record kinds: clients by name, and each key id's client.
const (
	recordClient = "client"
	recordKey    = "client_key"
)

// Registry is the bank's clients, sealed under one server key.
type Registry struct {
	l    *ledger.Ledger
	aead cipher.AEAD

	// known caches Lookup's answers for valid keys: every signed request
	// looks its key up, and reading, decoding and unsealing it each time
	// was a good part of the server's work per request. Every change goes
	// through this registry (the server holds the database file), and each
	// empties the cache once it is committed; generation stops a lookup
	// that read before the change from caching after it.
	mu         sync.Mutex
	known      map[string]lookedUp
	generation uint64
	// gold caches GoldKeys' answer (nil: not read since the last change),
	// under the same rules.
	gold []GoldKey
}

type lookedUp struct {
	secret [32]byte
	client Client
}

// New returns the registry of a bank, sealing with the server key.
func New(l *ledger.Ledger, serverKey [32]byte) (*Registry, error) {
	aead, err := chacha20poly1305.NewX(serverKey[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrServerKey, err)
	}
	return &Registry{l: l, aead: aead, known: map[string]lookedUp{}}, nil
}

// LoadServerKey reads a server key file (one line, 32 bytes as unpadded
// base64url), creating it with a new random key if create is set and the
// file does not exist; created says whether it did.
func LoadServerKey(path string, create bool) (key [32]byte, created bool, err error) {
	raw, err := auth.ReadSecretFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		if _, err := rand.Read(key[:]); err != nil {
			return key, false, fmt.Errorf("%w: %v", ErrServerKey, err)
		}
		line := base64.RawURLEncoding.EncodeToString(key[:]) + "\n"
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return key, false, fmt.Errorf("%w: create %s: %v", ErrServerKey, path, err)
		}
		if _, err := f.WriteString(line); err != nil {
			f.Close()
			return key, false, fmt.Errorf("%w: write %s: %v", ErrServerKey, path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return key, false, fmt.Errorf("%w: sync %s: %v", ErrServerKey, path, err)
		}
		return key, true, f.Close()
	}
	if errors.Is(err, os.ErrNotExist) {
		return key, false, fmt.Errorf("%w: no server key at %s (the first `ingot client add` makes one)", ErrServerKey, path)
	}
	if err != nil {
		return key, false, fmt.Errorf("%w: %v", ErrServerKey, err)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimSuffix(string(raw), "\n"))
	if err != nil || len(b) != len(key) {
		return key, false, fmt.Errorf("%w: %s is not 32 bytes of unpadded base64url on one line", ErrServerKey, path)
	}
	copy(key[:], b)
	return key, false, nil
}

// Seal seals a key's secret under the server key, bound to owner and the
// key's id, as a client's keys are stored; package peer seals the keys
// this bank signs its requests to other banks with.
func (r *Registry) Seal(owner string, k auth.Key) ([]byte, error) { return r.seal(owner, k) }

// Unseal opens what Seal sealed for owner.
func (r *Registry) Unseal(owner string, k Key) ([32]byte, error) { return r.unseal(owner, k) }

func (r *Registry) seal(client string, k auth.Key) ([]byte, error) {
	nonce := make([]byte, r.aead.NonceSize(), r.aead.NonceSize()+len(k.Secret)+r.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("clients: seal: %w", err)
	}
	return r.aead.Seal(nonce, nonce, k.Secret[:], additional(client, k.ID)), nil
}

func (r *Registry) unseal(client string, k Key) ([32]byte, error) {
	var secret [32]byte
	n := r.aead.NonceSize()
	if len(k.Sealed) < n {
		return secret, fmt.Errorf("%w: key %s of %s is truncated", ledger.ErrCorrupt, k.ID, client)
	}
	plain, err := r.aead.Open(nil, k.Sealed[:n], k.Sealed[n:], additional(client, k.ID))
	if err != nil || len(plain) != len(secret) {
		return secret, fmt.Errorf("%w: key %s of %s does not open with this server key (a different server key file?)", ErrServerKey, k.ID, client)
	}
	copy(secret[:], plain)
	return secret, nil
}

// additional binds a sealed secret to its client and key id, so that a
// sealed value cannot be moved to another key.
func additional(client, keyID string) []byte { return []byte(client + "\x00" + keyID) }

// NewSealedKey makes a key for client, with an id of the client's name and
// 8 random hex digits, and seals its secret. It runs before the ledger
// change, which may be retried, so that every run stores the same key.
func (r *Registry) NewSealedKey(client string) (auth.Key, []byte, error) {
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return auth.Key{}, nil, fmt.Errorf("clients: key id: %w", err)
	}
	key, err := auth.NewKey(client + "." + hex.EncodeToString(suffix))
	if err != nil {
		return auth.Key{}, nil, err
	}
	sealed, err := r.seal(client, key)
	return key, sealed, err
}

// CheckName refuses a name that is not a client's.
func CheckName(name string) error {
	if err := ledger.CheckUserName(name); err != nil || len(name) > 40 {
		return fmt.Errorf("%w: client name %q must be a user-like name of at most 40 characters", ledger.ErrInvalid, name)
	}
	return nil
}

// checkRole refuses a role with the wrong kind of scope.
func checkRole(tx ledger.Tx, role Role, scope []string) error {
	switch role {
	case RoleAdmin:
		if len(scope) > 0 {
			return fmt.Errorf("%w: an admin has no scope", ErrRole)
		}
	case RoleManager, RolePeer:
		if len(scope) == 0 && role == RoleManager {
			return fmt.Errorf("%w: a manager needs the nodes it manages (--scope NODE)", ErrRole)
		}
		for _, n := range scope {
			if _, err := ledger.GetNode(tx, n); err != nil {
				return fmt.Errorf("manager scope: %w", err)
			}
		}
	case RoleScheduler:
		if len(scope) == 0 {
			return fmt.Errorf("%w: a scheduler needs the machines it schedules (--scope MACHINE)", ErrRole)
		}
		for _, m := range scope {
			if _, ok, err := tx.Machine(m); err != nil {
				return err
			} else if !ok {
				return fmt.Errorf("%w: scheduler scope: no machine named %q", ledger.ErrNotFound, m)
			}
		}
	case RoleUser:
		if len(scope) != 1 {
			return fmt.Errorf("%w: a user client acts as exactly one bank user (--scope USER)", ErrRole)
		}
		if _, ok, err := tx.User(scope[0]); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: user scope: no user named %q", ledger.ErrNotFound, scope[0])
		}
	default:
		return fmt.Errorf("%w: unknown role %q (admin, manager, scheduler or user; peers are made by `ingot peer add`)", ErrRole, role)
	}
	return nil
}

// Add creates a client with its first key, and returns the key: the only
// time its secret is seen. A retry of the request (same actor and request
// id, same name, role and scope: a client resending after a lost answer)
// gets the first answer, with the key it made.
func (r *Registry) Add(ctx context.Context, req ledger.Request, spec Spec) (Client, auth.Key, error) {
	name, role, scope := spec.Name, spec.Role, spec.Scope
	if err := CheckName(name); err != nil {
		return Client{}, auth.Key{}, err
	}
	if role == RolePeer {
		return Client{}, auth.Key{}, fmt.Errorf("%w: a peer client is made with its agreement by `ingot peer add`", ErrRole)
	}
	key, sealed, err := r.NewSealedKey(name)
	if err != nil {
		return Client{}, auth.Key{}, err
	}
	// The new key is not part of the request's content: a retry makes
	// another one, and gets the first instead.
	content := struct {
		Name  string   `json:"name"`
		Role  Role     `json:"role"`
		Scope []string `json:"scope"`
		Gold  bool     `json:"gold,omitempty"`
	}{name, role, scope, spec.Gold}
	c, err := ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Client, error) {
		return r.AddWithin(w, spec, key.ID, sealed)
	})
	r.forgetLookups()
	if err != nil {
		return c, auth.Key{}, err
	}
	return r.MadeKey(c, key)
}

// AddWithin adds a client inside a ledger change that another package
// makes (a peer's agreement is its client and its record, in one change),
// with a key NewSealedKey made before the change. The caller calls
// Changed once the change is over.
func (r *Registry) AddWithin(w *ledger.Writer, spec Spec, keyID string, sealed []byte) (Client, error) {
	name, role, scope := spec.Name, spec.Role, spec.Scope
	if err := CheckName(name); err != nil {
		return Client{}, err
	}
	if _, ok, err := w.Tx().Record(recordClient, name); err != nil {
		return Client{}, err
	} else if ok {
		return Client{}, fmt.Errorf("%w: client %q", ledger.ErrExists, name)
	}
	if err := checkRole(w.Tx(), role, scope); err != nil {
		return Client{}, err
	}
	c := Client{Name: name, Role: role, Scope: scope, Gold: spec.Gold, Created: w.Now(), Keys: []Key{{ID: keyID, Created: w.Now(), Sealed: sealed}}}
	return c, r.put(w, c, keyID, "client added")
}

// RevokeAllWithin revokes every key of a client that is still valid,
// inside another package's ledger change (removing a peer); the caller
// calls Changed after it.
func (r *Registry) RevokeAllWithin(w *ledger.Writer, name string) (Client, error) {
	c, err := getClient(w.Tx(), name)
	if err != nil {
		return Client{}, err
	}
	for i := range c.Keys {
		if c.Keys[i].Revoked.IsZero() {
			c.Keys[i].Revoked = w.Now()
		}
	}
	return c, r.put(w, c, "", "every key revoked")
}

// SetScopeWithin sets a client's scope, inside another package's ledger
// change (a peer's agreement changed); the caller calls Changed after it.
func (r *Registry) SetScopeWithin(w *ledger.Writer, name string, scope []string) (Client, error) {
	c, err := getClient(w.Tx(), name)
	if err != nil {
		return Client{}, err
	}
	if err := checkRole(w.Tx(), c.Role, scope); err != nil {
		return Client{}, err
	}
	c.Scope = scope
	return c, r.put(w, c, "", "scope "+strings.Join(scope, ","))
}

// Changed forgets what the registry cached, after a change made with
// AddWithin, RevokeAllWithin or SetScopeWithin.
func (r *Registry) Changed() { r.forgetLookups() }

// Get is the client of that name, keys sealed.
func (r *Registry) Get(tx ledger.Tx, name string) (Client, error) { return getClient(tx, name) }

// Rotate adds a new key to a client; its other keys stay valid until
// revoked. A retry of the request gets the first answer, as Add's does.
func (r *Registry) Rotate(ctx context.Context, req ledger.Request, name string) (Client, auth.Key, error) {
	key, sealed, err := r.NewSealedKey(name)
	if err != nil {
		return Client{}, auth.Key{}, err
	}
	content := struct {
		Name string `json:"name"`
	}{name}
	c, err := ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Client, error) {
		c, err := getClient(w.Tx(), name)
		if err != nil {
			return Client{}, err
		}
		c.Keys = append(c.Keys, Key{ID: key.ID, Created: w.Now(), Sealed: sealed})
		return c, r.put(w, c, key.ID, "key added")
	})
	r.forgetLookups()
	if err != nil {
		return c, auth.Key{}, err
	}
	return r.MadeKey(c, key)
}

// MadeKey is the key a request for a new key made: the one it has just
// made, or, when the answer is a retry's first answer, the key made then
// (the newest key of the client as it was), unsealed again.
func (r *Registry) MadeKey(c Client, made auth.Key) (Client, auth.Key, error) {
	if len(c.Keys) == 0 {
		return c, auth.Key{}, fmt.Errorf("%w: client %s has no key", ledger.ErrCorrupt, c.Name)
	}
	first := c.Keys[len(c.Keys)-1]
	if first.ID == made.ID {
		return c, made, nil
	}
	secret, err := r.unseal(c.Name, first)
	return c, auth.Key{ID: first.ID, Secret: secret}, err
}

// Revoke ends a key of a client at once.
func (r *Registry) Revoke(ctx context.Context, req ledger.Request, name, keyID string) (Client, error) {
	content := struct{ Name, Key string }{name, keyID}
	defer r.forgetLookups()
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Client, error) {
		c, err := getClient(w.Tx(), name)
		if err != nil {
			return Client{}, err
		}
		i := slices.IndexFunc(c.Keys, func(k Key) bool { return k.ID == keyID })
		if i < 0 {
			return Client{}, fmt.Errorf("%w: client %s has no key %q", ledger.ErrNotFound, name, keyID)
		}
		if !c.Keys[i].Revoked.IsZero() {
			return Client{}, fmt.Errorf("%w: key %s was revoked at %s", ledger.ErrInactive, keyID, c.Keys[i].Revoked.Format(time.RFC3339))
		}
		c.Keys[i].Revoked = w.Now()
		return c, r.put(w, c, "", "key "+keyID+" revoked")
	})
}

// forgetLookups empties Lookup's cache after a change.
func (r *Registry) forgetLookups() {
	r.mu.Lock()
	r.generation++
	clear(r.known)
	r.gold = nil
	r.mu.Unlock()
}

// clone is a copy that shares no slice with c.
func (c Client) clone() Client {
	c.Scope, c.Keys = slices.Clone(c.Scope), slices.Clone(c.Keys)
	return c
}

// put journals the client record and, for a new key, its id's record.
func (r *Registry) put(w *ledger.Writer, c Client, newKeyID, what string) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("clients: encode %s: %w", c.Name, err)
	}
	if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: c.Name, Description: what,
		Record: &ledger.Record{Kind: recordClient, Key: c.Name, Value: raw}}); err != nil {
		return err
	}
	if newKeyID == "" {
		return nil
	}
	owner, err := json.Marshal(c.Name)
	if err != nil {
		return err
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: c.Name, Description: "key " + newKeyID,
		Record: &ledger.Record{Kind: recordKey, Key: newKeyID, Value: owner}})
	return err
}

func getClient(tx ledger.Tx, name string) (Client, error) {
	r, ok, err := tx.Record(recordClient, name)
	if err != nil {
		return Client{}, err
	}
	if !ok {
		return Client{}, fmt.Errorf("%w: no client named %q", ledger.ErrNotFound, name)
	}
	var c Client
	if err := json.Unmarshal(r.Value, &c); err != nil {
		return Client{}, fmt.Errorf("%w: client %s: %v", ledger.ErrCorrupt, name, err)
	}
	return c, nil
}

// List returns every client, keys sealed.
func (r *Registry) List(ctx context.Context) ([]Client, error) {
	var out []Client
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		recs, err := tx.Records(recordClient)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			c, err := getClient(tx, rec.Key)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// Lookup finds a key's client and secret for auth.Verifier: a revoked key
// or an unknown id is not ok.
func (r *Registry) Lookup(ctx context.Context, keyID string) (secret [32]byte, c Client, ok bool, err error) {
	hit, ok, err := r.lookup(ctx, keyID)
	return hit.secret, hit.client.clone(), ok, err
}

// Secret is Lookup's secret alone: it does not copy the client, which
// every signed request's check of its signature would do for nothing.
func (r *Registry) Secret(keyID string) (secret [32]byte, ok bool, err error) {
	// auth.Verifier asks without a context: a lookup is one read of a
	// record, cached after.
	hit, ok, err := r.lookup(context.Background(), keyID)
	return hit.secret, ok, err
}

// lookup is Lookup's answer from the cache, or read and cached. The cached
// client is never handed out, only copies of it.
func (r *Registry) lookup(ctx context.Context, keyID string) (found lookedUp, ok bool, err error) {
	r.mu.Lock()
	hit, cached := r.known[keyID]
	generation := r.generation
	r.mu.Unlock()
	if cached {
		return hit, true, nil
	}
	defer func() {
		if ok {
			r.mu.Lock()
			if r.generation == generation {
				r.known[keyID] = found
			}
			r.mu.Unlock()
		}
	}()
	err = r.l.View(ctx, func(tx ledger.Tx) error {
		rec, exists, err := tx.Record(recordKey, keyID)
		if err != nil || !exists {
			return err
		}
		var name string
		if err := json.Unmarshal(rec.Value, &name); err != nil {
			return fmt.Errorf("%w: key %s: %v", ledger.ErrCorrupt, keyID, err)
		}
		c, err := getClient(tx, name)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(c.Keys, func(k Key) bool { return k.ID == keyID })
		if i < 0 || !c.Keys[i].Revoked.IsZero() {
			return nil
		}
		secret, err := r.unseal(name, c.Keys[i])
		ok = err == nil
		found = lookedUp{secret, c}
		return err
	})
	return found, ok, err
}
