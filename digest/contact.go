package digest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"

	"github.com/ingot-hpc/ingot/ledger"
)

// contactKind is the kind of the records that hold contacts.
const contactKind = "contact"

// Contact is where a bank user's digests go: an email address, a webhook
// URL, both or neither, and whether they want digests at all (Off: opted
// out). A user without a contact record gets none.
type Contact struct {
	User    string `json:"user"`
	Email   string `json:"email,omitempty"`
	Webhook string `json:"webhook,omitempty"`
	Off     bool   `json:"off,omitempty"`
}

// ContactChange is what SetContact changes: the fields set ("" clears an
// address).
type ContactChange struct {
	Email   *string `json:"email,omitempty"`
	Webhook *string `json:"webhook,omitempty"`
	Off     *bool   `json:"off,omitempty"`
}

// Apply is c with the fields ch sets changed.
func (c Contact) Apply(ch ContactChange) Contact {
	if ch.Email != nil {
		c.Email = *ch.Email
	}
	if ch.Webhook != nil {
		c.Webhook = *ch.Webhook
	}
	if ch.Off != nil {
		c.Off = *ch.Off
	}
	return c
}

// check refuses an address that is not one.
func (c Contact) check() error {
	if c.Email != "" {
		a, err := mail.ParseAddress(c.Email)
		if err != nil || a.Name != "" || a.Address != c.Email {
			return fmt.Errorf("%w: email %q: want a bare address, user@host", ErrInvalid, c.Email)
		}
	}
	if c.Webhook != "" {
		if err := checkWebhook(c.Webhook); err != nil {
			return err
		}
	}
	return nil
}

// checkWebhook refuses a webhook URL that is not http(s)://host/...
func checkWebhook(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: webhook %q: want an http:// or https:// URL", ErrInvalid, s)
	}
	return nil
}

// Contacts keeps the contacts on a ledger.
type Contacts struct {
	l *ledger.Ledger
}

// NewContacts is the contacts of l.
func NewContacts(l *ledger.Ledger) *Contacts { return &Contacts{l: l} }

func decodeContact(r ledger.Record) (Contact, error) {
	var c Contact
	if err := json.Unmarshal(r.Value, &c); err != nil {
		return Contact{}, fmt.Errorf("%w: contact record %s: %v", ledger.ErrCorrupt, r.Key, err)
	}
	return c, nil
}

// List is every contact, in user order.
func (cs *Contacts) List(ctx context.Context) ([]Contact, error) {
	var out []Contact
	err := cs.l.View(ctx, func(tx ledger.Tx) error {
		recs, err := tx.Records(contactKind)
		if err != nil {
			return err
		}
		for _, r := range recs {
			c, err := decodeContact(r)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// Get is user's contact (its zero value, naming user, if none is set).
func (cs *Contacts) Get(ctx context.Context, user string) (Contact, error) {
	c := Contact{User: user}
	err := cs.l.View(ctx, func(tx ledger.Tx) error {
		r, ok, err := tx.Record(contactKind, user)
		if err != nil || !ok {
			return err
		}
		c, err = decodeContact(r)
		return err
	})
	return c, err
}

// Set changes user's contact (a bank user), journaled.
func (cs *Contacts) Set(ctx context.Context, req ledger.Request, user string, ch ContactChange) (Contact, error) {
	content := struct {
		User string `json:"user"`
		ContactChange
	}{user, ch}
	return ledger.Mutate(ctx, cs.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (Contact, error) {
		if _, ok, err := w.Tx().User(user); err != nil {
			return Contact{}, err
		} else if !ok {
			return Contact{}, fmt.Errorf("%w: user %s", ledger.ErrNotFound, user)
		}
		c := Contact{User: user}
		r, ok, err := w.Tx().Record(contactKind, user)
		if err != nil {
			return Contact{}, err
		}
		if ok {
			if c, err = decodeContact(r); err != nil {
				return Contact{}, err
			}
		}
		next := c.Apply(ch)
		if err := next.check(); err != nil {
			return Contact{}, err
		}
		if next == c && ok {
			return c, nil // already so: nothing journaled
		}
		b, err := json.Marshal(next)
		if err != nil {
			return Contact{}, fmt.Errorf("digest: encode contact %s: %w", user, err)
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: user, Description: "contact set",
			Record: &ledger.Record{Kind: contactKind, Key: user, Value: b}})
		return next, err
	})
}
