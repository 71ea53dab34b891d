package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// Scope checks, after the route has admitted the client's role: what a
// manager, scheduler or user client may touch. An admin may touch all.

// requireManages refuses a client that does not manage every node: a
// manager manages the nodes of its scope and their subtrees.
func requireManages(c clients.Client, action string, nodes ...string) error {
	if c.Role == clients.RoleAdmin {
		return nil
	}
	for _, node := range nodes {
		if c.Role != clients.RoleManager || !slices.ContainsFunc(c.Scope, func(root string) bool { return ledger.InSubtree(node, root) }) {
			return forbidden(c, "%s %s: outside the subtrees it manages", action, node)
		}
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

// requireReads refuses a client that may not read a node's balance: a
// manager reads inside its subtrees, a scheduler reads every node (it
// prices and places jobs of any project), a user client reads the nodes
// its bank user is a member or manager of, directly or through an ancestor.
func (s *Server) requireReads(c clients.Client, node string) error {
	switch c.Role {
	case clients.RoleAdmin, clients.RoleScheduler:
		return nil
	case clients.RoleManager:
		return requireManages(c, "read", node)
	case clients.RoleUser:
		return s.requireMember(c, node)
	}
	return forbidden(c, "read %s", node)
}

// requireMember refuses a user client whose bank user is not a member or
// manager of node or of a node above it.
func (s *Server) requireMember(c clients.Client, node string) error {
	if len(c.Scope) != 1 {
		return forbidden(c, "read %s: the client acts as no bank user", node)
	}
	name := c.Scope[0]
	u, found, err := s.bankUser(name)
	switch {
	case err != nil:
		return fmt.Errorf("client %s: %w", c.Name, err)
	case !found:
		return forbidden(c, "read %s: its bank user %s no longer exists", node, name)
	case !u.Active:
		return forbidden(c, "read %s: its bank user %s is inactive", node, name)
	case u.RoleIn(node) == "":
		return forbidden(c, "read %s: user %s is not a member or manager of it or of a node above it", node, name)
	}
	return nil
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
