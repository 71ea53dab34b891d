package peer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// recordPeer is the kind of the peers' records, by name.
const recordPeer = ledger.RecordPeer

// Peer is another bank and this bank's agreement with it.
type Peer struct {
	Name string `json:"name"`
	// URL is where the other bank's API answers.
	URL string `json:"url"`
	// CAFile, if set, holds the authorities the peer's certificate is
	// checked against instead of the system's.
	CAFile  string    `json:"ca_file,omitempty"`
	Created time.Time `json:"created"`
	// Key is the key this bank signs its requests to the peer with, its
	// secret sealed; nil until the other bank's key file is given.
	Key *clients.Key `json:"key,omitempty"`
	// Projects are the projects of this bank the peer may act on: its
	// client's scope, not stored in the record.
	Projects []string `json:"projects,omitempty"`
	// Revoked is when the peer was removed: its client's keys were
	// revoked then. Zero for a current peer.
	Revoked time.Time `json:"revoked,omitzero"`
	// WhenAway is what this bank does with a lien or charge of a project
	// homed at the peer while the peer cannot be reached (AwayAccepts).
	WhenAway Away `json:"when_away"`
	// CreditLine bounds what AwayAccept accepts: the liens and charges
	// pending with the peer, in this bank's credits, across every project
	// homed there.
	CreditLine decimal.Decimal `json:"credit_line"`
}

// Away is a peer's away policy.
type Away string

// The away policies: refuse every lien and charge of a project homed at
// the peer while it cannot be reached (a peer's record made before the
// policies existed holds none: it refuses), or accept them up to the
// peer's credit line, to be sent when the peer is back.
const (
	AwayRefuse Away = "refuse"
	AwayAccept Away = "accept"
)

// ParseAway reads an away policy as an operator writes it.
func ParseAway(s string) (Away, error) {
	switch a := Away(s); a {
	case AwayRefuse, AwayAccept:
		return a, nil
	}
	return "", fmt.Errorf("%w: %q: want refuse or accept", ErrAway, s)
}

// checkAway refuses a policy and credit line that do not go together: a
// credit line is what accept accepts, so refuse has none and accept
// needs one above 0.
func checkAway(a Away, line decimal.Decimal) error {
	if _, err := ParseAway(string(a)); err != nil {
		return err
	}
	switch {
	case line.IsNegative():
		return fmt.Errorf("%w: credit line %s is below 0", ErrAway, line)
	case a == AwayAccept && !line.IsPositive():
		return fmt.Errorf("%w: accept while away needs a credit line above 0 (refuse accepts nothing)", ErrAway)
	case a == AwayRefuse && !line.IsZero():
		return fmt.Errorf("%w: a credit line of %s goes with accept while away, not refuse", ErrAway, line)
	}
	return nil
}

// Public is the peer as shown: its key's id and dates, not the sealed
// secret.
func (p Peer) Public() Peer {
	if p.Key != nil {
		k := *p.Key
		k.Sealed = nil
		p.Key = &k
	}
	p.Projects = slices.Clone(p.Projects)
	return p
}

// Spec is a new peer. An empty WhenAway is refuse.
type Spec struct {
	Name       string          `json:"name"`
	URL        string          `json:"url"`
	CAFile     string          `json:"ca_file,omitempty"`
	Projects   []string        `json:"projects,omitempty"`
	WhenAway   Away            `json:"when_away,omitempty"`
	CreditLine decimal.Decimal `json:"credit_line,omitzero"`
}

// Change changes a peer (Modify): each field set changes, the others stay.
// CAFile "" goes back to the system's authorities. AddProjects and
// RemoveProjects change the agreement: the projects the peer may act on.
type Change struct {
	URL            *string          `json:"url,omitempty"`
	CAFile         *string          `json:"ca_file,omitempty"`
	WhenAway       *Away            `json:"when_away,omitempty"`
	CreditLine     *decimal.Decimal `json:"credit_line,omitempty"`
	AddProjects    []string         `json:"add_projects,omitempty"`
	RemoveProjects []string         `json:"remove_projects,omitempty"`
}

// Registry is the bank's peers, their keys sealed by the bank's client
// registry.
type Registry struct {
	l       *ledger.Ledger
	clients *clients.Registry
	// answered are peers' answers not journaled yet (Answered), by
	// transaction id.
	answered answers
	// reach is what this process knows of which peers answer (Away).
	reach reach
}

// New returns the peers of a bank.
func New(l *ledger.Ledger, reg *clients.Registry) *Registry {
	return &Registry{l: l, clients: reg}
}

// CheckURL refuses a URL a peer cannot be reached at safely: anything but
// https, or http to a loopback address (a test, or a tunnel's end).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: %q: want https://HOST[:PORT][/PATH]", ErrURL, raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("%w: %q: plain http only to a loopback address; a peer elsewhere is reached over https", ErrURL, raw)
	}
	return fmt.Errorf("%w: %q: want https://HOST[:PORT][/PATH]", ErrURL, raw)
}

// keyOwner binds a peer's sealed key to the peer, apart from any client's.
func keyOwner(name string) string { return "peer/" + name }

// Add makes a peer: its client, with a first key that Add returns (the
// only time its secret is seen: the other bank signs with it), and its
// record, holding peerKey sealed if the other bank's key is known already
// (nil: SetKey gives it later). A retry of the request gets the first
// answer, with the key made then.
func (r *Registry) Add(ctx context.Context, req ledger.Request, spec Spec, peerKey *auth.Key) (Peer, auth.Key, error) {
	if err := clients.CheckName(spec.Name); err != nil {
		return Peer{}, auth.Key{}, err
	}
	if err := CheckURL(spec.URL); err != nil {
		return Peer{}, auth.Key{}, err
	}
	spec.WhenAway = cmp.Or(spec.WhenAway, AwayRefuse)
	if err := checkAway(spec.WhenAway, spec.CreditLine); err != nil {
		return Peer{}, auth.Key{}, err
	}
	key, sealed, err := r.clients.NewSealedKey(spec.Name)
	if err != nil {
		return Peer{}, auth.Key{}, err
	}
	var stored *clients.Key
	content := struct {
		Spec
		KeyID string `json:"key_id,omitempty"`
	}{Spec: spec}
	if peerKey != nil {
		s, err := r.clients.Seal(keyOwner(spec.Name), *peerKey)
		if err != nil {
			return Peer{}, auth.Key{}, err
		}
		stored = &clients.Key{ID: peerKey.ID, Sealed: s}
		content.KeyID = peerKey.ID
	}
	type added struct {
		Peer   Peer           `json:"peer"`
		Client clients.Client `json:"client"`
	}
	a, err := ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (added, error) {
		if _, ok, err := w.Tx().Record(recordPeer, spec.Name); err != nil {
			return added{}, err
		} else if ok {
			return added{}, fmt.Errorf("%w: peer %q", ledger.ErrExists, spec.Name)
		}
		if err := notRemoved(w.Tx(), r.clients, spec.Name); err != nil {
			return added{}, err
		}
		c, err := r.clients.AddWithin(w, clients.Spec{Name: spec.Name, Role: clients.RolePeer, Scope: spec.Projects}, key.ID, sealed)
		if err != nil {
			return added{}, err
		}
		p := Peer{Name: spec.Name, URL: spec.URL, CAFile: spec.CAFile, Created: w.Now(), WhenAway: spec.WhenAway, CreditLine: spec.CreditLine}
		if stored != nil {
			k := *stored
			k.Created = w.Now()
			p.Key = &k
		}
		if err := put(w, p, "peer added"); err != nil {
			return added{}, err
		}
		p.Projects = c.Scope
		return added{p.Public(), c.Public()}, nil
	})
	r.clients.Changed()
	if err != nil {
		return Peer{}, auth.Key{}, err
	}
	_, made, err := r.clients.MadeKey(a.Client, key)
	if err != nil {
		// A retry's first answer has the client's keys without their
		// sealed secrets: read it again to unseal the key made then.
		c, rerr := r.client(ctx, spec.Name)
		if rerr != nil {
			return a.Peer, auth.Key{}, rerr
		}
		_, made, err = r.clients.MadeKey(c, key)
	}
	return a.Peer, made, err
}

// notRemoved refuses the name of a peer that was removed: its client
// stays, revoked, and the journal, its transactions and the other bank's
// records name it, so a new peer of that name would be taken for it.
func notRemoved(tx ledger.Tx, reg *clients.Registry, name string) error {
	c, err := reg.Get(tx, name)
	if errors.Is(err, ledger.ErrNotFound) || err == nil && c.Role != clients.RolePeer {
		return nil // none, or another client's name, which AddWithin refuses
	}
	if err != nil {
		return err
	}
	removed := time.Time{}
	for _, k := range c.Keys {
		if k.Revoked.After(removed) {
			removed = k.Revoked
		}
	}
	return fmt.Errorf("%w: peer %q was removed at %s: a peer's name is not used again, since this bank's journal and transactions and the other bank's records name it; add the bank again under another name", ledger.ErrExists, name, removed.Format(time.RFC3339))
}

// Modify changes a peer's URL, CA file, away policy and agreement, in one
// journaled change; its keys stay as they are.
func (r *Registry) Modify(ctx context.Context, req ledger.Request, name string, ch Change) (Peer, error) {
	if ch.URL != nil {
		if err := CheckURL(*ch.URL); err != nil {
			return Peer{}, err
		}
	}
	content := struct {
		Name   string `json:"name"`
		Change Change `json:"change"`
	}{name, ch}
	defer r.clients.Changed()
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Peer, error) {
		p, err := get(w.Tx(), name)
		if err != nil {
			return Peer{}, err
		}
		if ch.URL != nil {
			p.URL = *ch.URL
		}
		if ch.CAFile != nil {
			p.CAFile = *ch.CAFile
		}
		if ch.WhenAway != nil {
			p.WhenAway = *ch.WhenAway
			if p.WhenAway == AwayRefuse && ch.CreditLine == nil {
				p.CreditLine = decimal.Zero
			}
		}
		if ch.CreditLine != nil {
			p.CreditLine = *ch.CreditLine
		}
		if err := checkAway(p.WhenAway, p.CreditLine); err != nil {
			return Peer{}, fmt.Errorf("peer %s: %w", name, err)
		}
		if len(ch.AddProjects)+len(ch.RemoveProjects) > 0 {
			if err := r.changeAgreement(w, name, ch.AddProjects, ch.RemoveProjects); err != nil {
				return Peer{}, err
			}
		}
		if err := put(w, p, "peer modified"); err != nil {
			return Peer{}, err
		}
		return r.withProjects(w.Tx(), p)
	})
}

// changeAgreement adds projects to the peer's agreement (its client's
// scope) and removes others, refusing a project named twice, added that
// the agreement names already or removed that it does not.
func (r *Registry) changeAgreement(w *ledger.Writer, name string, add, remove []string) error {
	c, err := r.clients.Get(w.Tx(), name)
	if err != nil {
		return fmt.Errorf("peer %s: %w", name, err)
	}
	scope := slices.Clone(c.Scope)
	for _, p := range add {
		if slices.Contains(remove, p) {
			return fmt.Errorf("%w: peer %s: %s both added and removed", ledger.ErrInvalid, name, p)
		}
		if slices.Contains(scope, p) {
			return fmt.Errorf("%w: peer %s: its agreement names %s already", ledger.ErrExists, name, p)
		}
		scope = append(scope, p)
	}
	for _, p := range remove {
		i := slices.Index(scope, p)
		if i < 0 {
			return fmt.Errorf("%w: peer %s: its agreement does not name %s", ledger.ErrNotFound, name, p)
		}
		scope = slices.Delete(scope, i, i+1)
	}
	_, err = r.clients.SetScopeWithin(w, name, scope)
	return err
}

// SetKey stores the key this bank signs its requests to the peer with:
// the key file the other bank's `ingot peer add` wrote. It replaces the
// one stored before, if any.
func (r *Registry) SetKey(ctx context.Context, req ledger.Request, name string, k auth.Key) (Peer, error) {
	sealed, err := r.clients.Seal(keyOwner(name), k)
	if err != nil {
		return Peer{}, err
	}
	content := struct{ Name, KeyID string }{name, k.ID}
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Peer, error) {
		p, err := get(w.Tx(), name)
		if err != nil {
			return Peer{}, err
		}
		p.Key = &clients.Key{ID: k.ID, Created: w.Now(), Sealed: sealed}
		if err := put(w, p, "peer key "+k.ID); err != nil {
			return Peer{}, err
		}
		return r.withProjects(w.Tx(), p)
	})
}

// Remove ends the agreement with a peer: its record goes, and every key
// of its client is revoked at once, so that it can no longer act here.
// The client stays, revoked, as clients do, for the journal's sake.
func (r *Registry) Remove(ctx context.Context, req ledger.Request, name string) (Peer, error) {
	content := struct{ Name string }{name}
	defer r.clients.Changed()
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Peer, error) {
		p, err := get(w.Tx(), name)
		if err != nil {
			return Peer{}, err
		}
		if _, err := r.clients.RevokeAllWithin(w, name); err != nil {
			return Peer{}, err
		}
		if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: name, Description: "peer removed",
			Record: &ledger.Record{Kind: recordPeer, Key: name, Deleted: true}}); err != nil {
			return Peer{}, err
		}
		p.Revoked = w.Now()
		return p.Public(), nil
	})
}

// List is every peer, in name order.
func (r *Registry) List(ctx context.Context) ([]Peer, error) {
	var out []Peer
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		recs, err := tx.Records(recordPeer)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			p, err := decode(rec)
			if err != nil {
				return err
			}
			if p, err = r.withProjects(tx, p); err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Get is one peer.
func (r *Registry) Get(ctx context.Context, name string) (Peer, error) {
	var p Peer
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		found, err := get(tx, name)
		if err != nil {
			return err
		}
		p, err = r.withProjects(tx, found)
		return err
	})
	return p, err
}

// SigningKey is the key this bank signs its requests to the peer with,
// unsealed.
func (r *Registry) SigningKey(ctx context.Context, name string) (auth.Key, error) {
	var p Peer
	err := r.l.View(ctx, func(tx ledger.Tx) (err error) {
		p, err = get(tx, name)
		return err
	})
	if err != nil {
		return auth.Key{}, err
	}
	if p.Key == nil {
		return auth.Key{}, fmt.Errorf("%w: peer %s has no key to sign with yet (`ingot peer key %s FILE`)", ledger.ErrNotFound, name, name)
	}
	secret, err := r.clients.Unseal(keyOwner(name), *p.Key)
	return auth.Key{ID: p.Key.ID, Secret: secret}, err
}

// client reads the peer's client, keys sealed.
func (r *Registry) client(ctx context.Context, name string) (clients.Client, error) {
	var c clients.Client
	err := r.l.View(ctx, func(tx ledger.Tx) (err error) {
		c, err = r.clients.Get(tx, name)
		return err
	})
	return c, err
}

// withProjects is p, shown, with its client's scope.
func (r *Registry) withProjects(tx ledger.Tx, p Peer) (Peer, error) {
	c, err := r.clients.Get(tx, p.Name)
	if err != nil {
		return Peer{}, fmt.Errorf("peer %s: %w", p.Name, err)
	}
	p.Projects = c.Scope
	return p.Public(), nil
}

func put(w *ledger.Writer, p Peer, what string) error {
	p.Projects = nil
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("peer: encode %s: %w", p.Name, err)
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: p.Name, Description: what,
		Record: &ledger.Record{Kind: recordPeer, Key: p.Name, Value: raw}})
	return err
}

func get(tx ledger.Tx, name string) (Peer, error) {
	rec, ok, err := tx.Record(recordPeer, name)
	if err != nil {
		return Peer{}, err
	}
	if !ok {
		return Peer{}, fmt.Errorf("%w: no peer named %q", ledger.ErrNotFound, name)
	}
	return decode(rec)
}

func decode(rec ledger.Record) (Peer, error) {
	var p Peer
	if err := json.Unmarshal(rec.Value, &p); err != nil {
		return Peer{}, fmt.Errorf("%w: peer %s: %v", ledger.ErrCorrupt, rec.Key, err)
	}
	p.WhenAway = cmp.Or(p.WhenAway, AwayRefuse)
	return p, nil
}
