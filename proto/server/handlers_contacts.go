package server

import (
	"context"

	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// The contacts digests go to (package digest): an admin reads and sets
// every one; a user client reads its bank user's and sets its email and
// opt-out. A webhook URL is the admin's to set: the server posts to it.

// ownUser is the bank user a user client acts as, "" for another client.
func ownUser(c clients.Client) string {
	if c.Role != clients.RoleUser || len(c.Scope) != 1 {
		return ""
	}
	return c.Scope[0]
}

func (s *Server) contactList(c *call, _ api.NoQuery) (api.List[digest.Contact], error) {
	all, err := s.contacts.List(c.r.Context())
	if err != nil || c.client.Role == clients.RoleAdmin {
		return api.ListOf(all), err
	}
	out := []digest.Contact{}
	for _, ct := range all {
		if ct.User == ownUser(c.client) {
			out = append(out, ct)
		}
	}
	return api.ListOf(out), nil
}

// notify sends the digests due now, or says what they would be. A run
// begun goes to its end even if the client leaves (or the answer's
// deadline passes while a mail server is slow): the log says what it did.
func (s *Server) notify(c *call, r api.NotifyRequest) (api.List[digest.Digest], error) {
	if s.notifier == nil {
		return api.List[digest.Digest]{}, api.Errorf(api.CodeInvalid, "this server sends no digests: it was started without smtp-server or webhook-secret-file")
	}
	ds, err := s.notifier.Run(context.WithoutCancel(c.r.Context()), r.DryRun)
	return api.ListOf(ds), err
}

func (s *Server) setContact(c *call, m api.ContactRequest) (digest.Contact, error) {
	if c.client.Role != clients.RoleAdmin {
		if own := ownUser(c.client); own == "" || own != m.Name {
			return digest.Contact{}, forbidden(c.client, "set the contact of user %s: a user sets its own", m.Name)
		}
		if m.Change.Webhook != nil {
			return digest.Contact{}, forbidden(c.client, "set a webhook for user %s: the server posts to it (ask an admin)", m.Name)
		}
	}
	return s.contacts.Set(c.r.Context(), c.req, m.Name, m.Change)
}
