package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// Scope checks, after the route has admitted the client's role: what a
// manager, scheduler or user client may touch. An admin may touch all.

// manages reports whether a manager client manages node: it is in the
// subtree of a node of its scope.
func manages(c clients.Client, node string) bool {
	return c.Role == clients.RoleManager && slices.ContainsFunc(c.Scope, func(root string) bool { return ledger.InSubtree(node, root) })
}

// requireManages refuses a client that does not manage every node.
func requireManages(c clients.Client, action string, nodes ...string) error {
	if c.Role == clients.RoleAdmin {
		return nil
	}
	for _, node := range nodes {
		if !manages(c, node) {
			return forbidden(c, "%s %s: outside the subtrees it manages", action, node)
		}
	}
	return nil
}

// requireManagesBelow refuses a client that does not manage the node's
// parent: a manager creates, changes, deactivates and reactivates the
// projects below the nodes it manages, not those nodes themselves (their
// share among their siblings is decided above them), and no account.
func requireManagesBelow(c clients.Client, action, node string) error {
	if c.Role == clients.RoleAdmin {
		return nil
	}
	if parent := ledger.ParentOf(node); parent == "" || !manages(c, parent) {
		return forbidden(c, "%s %s: it is not below a node it manages", action, node)
	}
	return nil
}

// requireManagesMemberships refuses a manager a change of a user beyond
// the members of the subtrees it manages: it adds and removes memberships
// of nodes there, and moves the user's default project between projects
// there (or clears it, so that it can remove a member whose default
// project that was). A user's description and active state are the
// admin's: a user is shared by every account.
func (s *Server) requireManagesMemberships(ctx context.Context, c clients.Client, name string, ch ledger.UserChange) error {
	if c.Role == clients.RoleAdmin {
		return nil
	}
	if ch.Description != nil || ch.Active != nil {
		return forbidden(c, "change the description or active state of user %s: a user is shared by every account (ask an admin)", name)
	}
	for _, m := range ch.Add {
		if err := requireManages(c, "add user "+name+" to", m.Node); err != nil {
			return err
		}
	}
	if err := requireManages(c, "remove user "+name+" from", ch.Remove...); err != nil {
		return err
	}
	if ch.DefaultProject == nil {
		return nil
	}
	// The default project now is read before the change is made: a change
	// in between by an admin could at worst be undone by the manager's,
	// which the journal shows.
	u, found, err := s.bankUser(ctx, name)
	if err != nil || !found {
		return err // an unknown user: the ledger says so
	}
	if u.DefaultProject != "" {
		if err := requireManages(c, "change user "+name+"'s default project, now", u.DefaultProject); err != nil {
			return err
		}
	}
	if p := *ch.DefaultProject; p != "" {
		return requireManages(c, "make user "+name+"'s default project", p)
	}
	return nil
}

// requireSchedules refuses a client that is not the scheduler of machine.
func requireSchedules(c clients.Client, action, machine string) error {
	if c.Role == clients.RoleAdmin || c.Role == clients.RoleScheduler && slices.Contains(c.Scope, machine) {
		return nil
	}
	return forbidden(c, "%s machine %q: not one of its machines", action, machine)
}

// reach is what a client may read. An admin and a scheduler read every
// node (a scheduler prices and places jobs of any project); a manager reads
// the subtrees of its scope; a user client the subtrees of the nodes its
// bank user is a member or manager of. The records of jobs (liens, charges,
// quotes, reservations) are read by their project, and a scheduler's only
// on its machines.
type reach struct {
	client clients.Client
	// roots are the nodes whose subtrees the client reads; nil: every node.
	roots []string
	// nobody says why a user client reads nothing, if it does not.
	nobody string
}

// reachOf is the reach of a client now: a user client's follows its bank
// user's memberships.
func (s *Server) reachOf(ctx context.Context, c clients.Client) (reach, error) {
	switch c.Role {
	case clients.RoleAdmin, clients.RoleScheduler:
		return reach{client: c}, nil
	case clients.RoleManager:
		return reach{client: c, roots: c.Scope}, nil
	}
	r := reach{client: c, roots: []string{}}
	if c.Role != clients.RoleUser || len(c.Scope) != 1 {
		r.nobody = "the client acts as no bank user"
		return r, nil
	}
	name := c.Scope[0]
	u, found, err := s.bankUser(ctx, name)
	switch {
	case err != nil:
		return r, fmt.Errorf("user %s of client %s: %w", name, c.Name, err)
	case !found:
		r.nobody = fmt.Sprintf("its bank user %s no longer exists", name)
	case !u.Active:
		r.nobody = fmt.Sprintf("its bank user %s is inactive", name)
	default:
		for _, m := range u.Memberships {
			r.roots = append(r.roots, m.Node)
		}
	}
	return r, nil
}

// node reports whether the client reads node.
func (r reach) node(name string) bool {
	return r.roots == nil || slices.ContainsFunc(r.roots, func(root string) bool { return ledger.InSubtree(name, root) })
}

// readsBelow reports whether the client reads a node of account's
// subtree: a project drawing on the account's allocations, which the
// account's schedules then concern.
func (r reach) readsBelow(account string) bool {
	return r.roots == nil || slices.ContainsFunc(r.roots, func(root string) bool { return ledger.InSubtree(root, account) })
}

// job reports whether the client reads a job's records.
func (r reach) job(project, machine string) bool {
	if r.client.Role == clients.RoleScheduler {
		return slices.Contains(r.client.Scope, machine)
	}
	return r.node(project)
}

// user reports whether the client reads a bank user's record: a user
// client only its own, a manager those with a membership in its subtrees.
func (r reach) user(u ledger.User) bool {
	switch {
	case r.roots == nil:
		return true
	case r.client.Role == clients.RoleUser:
		return r.nobody == "" && u.Name == r.client.Scope[0]
	}
	return slices.ContainsFunc(u.Memberships, func(m ledger.Membership) bool { return r.node(m.Node) })
}

// require refuses a node the client does not read, saying why.
func (r reach) require(node string) error {
	if r.node(node) {
		return nil
	}
	return forbidden(r.client, "read %s: %s", node, r.why())
}

// requireJobsOn refuses a scheduler the records of jobs on a machine it
// does not schedule, before they are looked up.
func requireJobsOn(c clients.Client, what, machine string) error {
	if c.Role == clients.RoleScheduler && !slices.Contains(c.Scope, machine) {
		return forbidden(c, "read %s on machine %q: not one of its machines", what, machine)
	}
	return nil
}

// why says why the client does not read a node.
func (r reach) why() string {
	switch {
	case r.nobody != "":
		return r.nobody
	case r.client.Role == clients.RoleManager:
		return "outside the subtrees it manages"
	}
	return fmt.Sprintf("user %s is not a member or manager of it or of a node above it", r.client.Scope[0])
}

// requireReads refuses a client that may not read a node.
func (s *Server) requireReads(ctx context.Context, c clients.Client, node string) error {
	r, err := s.reachOf(ctx, c)
	if err != nil {
		return err
	}
	return r.require(node)
}

// forbidden is the refusal of what a client asked, naming the client, its
// role and scope, and what was refused.
func forbidden(c clients.Client, format string, args ...any) error {
	who := fmt.Sprintf("client %s (%s", c.Name, c.Role)
	if len(c.Scope) > 0 {
		who += " of " + strings.Join(c.Scope, ", ")
	}
	who += ")"
	return api.Errorf(api.CodeForbidden, "%s may not %s", who, fmt.Sprintf(format, args...)).With("role", string(c.Role))
}

// readable is what list returns that the client reads.
func readable[T any](ctx context.Context, s *Server, c *call, list func(context.Context) ([]T, error), reads func(reach, T) bool) (api.List[T], error) {
	r, err := s.reachOf(ctx, c.client)
	if err != nil {
		return api.List[T]{}, err
	}
	items, err := list(c.r.Context())
	return api.ListOf(filter(items, func(x T) bool { return reads(r, x) })), err
}

// filter keeps the items keep says to.
func filter[T any](items []T, keep func(T) bool) []T {
	return slices.DeleteFunc(items, func(x T) bool { return !keep(x) })
}
