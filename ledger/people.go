package ledger

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// UserSpec is a user to add.
type UserSpec struct {
	Name           string       `json:"name"`
	Description    string       `json:"description,omitempty"`
	DefaultProject string       `json:"default_project,omitempty"`
	Memberships    []Membership `json:"memberships,omitempty"`
}

// UserChange lists what to modify in a user; nil fields stay as they are.
// Memberships in Add replace any existing one on the same node.
type UserChange struct {
	Description    *string      `json:"description,omitempty"`
	DefaultProject *string      `json:"default_project,omitempty"`
	Add            []Membership `json:"add,omitempty"`
	Remove         []string     `json:"remove,omitempty"`
	Active         *bool        `json:"active,omitempty"`
}

// AddUser adds a user with their memberships.
func (l *Ledger) AddUser(ctx context.Context, req Request, spec UserSpec) (User, error) {
	if err := CheckUserName(spec.Name); err != nil {
		return User{}, err
	}
	return Mutate(ctx, l, req, KindUserAdd, spec, func(w *Writer) (User, error) {
		if _, ok, err := w.tx.User(spec.Name); err != nil {
			return User{}, err
		} else if ok {
			return User{}, fmt.Errorf("%w: user %q", ErrExists, spec.Name)
		}
		u := User{Name: spec.Name, Description: spec.Description, Active: true, Created: w.now}
		if err := u.apply(w.tx, UserChange{DefaultProject: &spec.DefaultProject, Add: spec.Memberships}); err != nil {
			return User{}, err
		}
		return u, putUser(w, KindUserAdd, u)
	})
}

// ModifyUser changes a user's description, default project, memberships or
// active state.
func (l *Ledger) ModifyUser(ctx context.Context, req Request, name string, change UserChange) (User, error) {
	return Mutate(ctx, l, req, KindUserModify, struct {
		Name   string     `json:"name"`
		Change UserChange `json:"change"`
	}{name, change}, func(w *Writer) (User, error) {
		u, ok, err := w.tx.User(name)
		if err != nil {
			return User{}, err
		}
		if !ok {
			return User{}, fmt.Errorf("%w: no user named %s", ErrNotFound, Excerpt(name))
		}
		if err := u.apply(w.tx, change); err != nil {
			return User{}, err
		}
		return u, putUser(w, KindUserModify, u)
	})
}

// apply makes the change to u, checking that every node it names exists
// and that the default project is one the user may use.
func (u *User) apply(tx Tx, c UserChange) error {
	if c.Description != nil {
		u.Description = *c.Description
	}
	if c.Active != nil {
		u.Active = *c.Active
	}
	for _, name := range c.Remove {
		i := slices.IndexFunc(u.Memberships, func(m Membership) bool { return m.Node == name })
		if i < 0 {
			return fmt.Errorf("%w: user %s is not a member of %s", ErrNotFound, u.Name, Excerpt(name))
		}
		u.Memberships = slices.Delete(u.Memberships, i, i+1)
	}
	for _, m := range c.Add {
		if m.Role != RoleMember && m.Role != RoleManager {
			return fmt.Errorf("%w: role %s of user %s in %s (member or manager)", ErrInvalid, Excerpt(string(m.Role)), u.Name, Excerpt(m.Node))
		}
		if _, err := ActiveNode(tx, m.Node); err != nil {
			return fmt.Errorf("membership of user %s: %w", u.Name, err)
		}
		u.Memberships = slices.DeleteFunc(u.Memberships, func(old Membership) bool { return old.Node == m.Node })
		u.Memberships = append(u.Memberships, m)
	}
	slices.SortFunc(u.Memberships, func(a, b Membership) int { return strings.Compare(a.Node, b.Node) })
	if c.DefaultProject != nil {
		u.DefaultProject = *c.DefaultProject
	}
	if u.DefaultProject == "" {
		return nil
	}
	node, err := ActiveNode(tx, u.DefaultProject)
	if err != nil {
		return fmt.Errorf("default project of user %s: %w", u.Name, err)
	}
	if !node.AnyUser && u.RoleIn(u.DefaultProject) == "" {
		return fmt.Errorf("%w: default project %s: user %s is not a member of it or of a node above it", ErrInvalid, u.DefaultProject, u.Name)
	}
	return nil
}

// RoleIn is the user's role in a node, inherited from the nearest ancestor
// the user is a member of; "" if none.
func (u User) RoleIn(node string) Role {
	for n := node; n != ""; n = ParentOf(n) {
		for _, m := range u.Memberships {
			if m.Node == n {
				return m.Role
			}
		}
	}
	return ""
}

func putUser(w *Writer, kind Kind, u User) error {
	if err := w.tx.PutUser(u); err != nil {
		return err
	}
	_, err := w.Append(Entry{Kind: kind, UserState: &u})
	return err
}

// Users lists every user in name order.
func (l *Ledger) Users(ctx context.Context) ([]User, error) {
	var out []User
	err := l.store.View(ctx, func(tx Tx) (err error) {
		out, err = tx.Users()
		return err
	})
	return out, err
}

// MachineSpec is a machine to add.
type MachineSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Shape       Shape  `json:"shape"`
}

// MachineChange lists what to modify in a machine; nil fields stay.
type MachineChange struct {
	Description *string `json:"description,omitempty"`
	Cores       *int64  `json:"cores,omitempty"`
	MemoryMB    *int64  `json:"memory_mb,omitempty"`
	GPUs        *int64  `json:"gpus,omitempty"`
	Active      *bool   `json:"active,omitempty"`
}

// AddMachine adds a cluster.
func (l *Ledger) AddMachine(ctx context.Context, req Request, spec MachineSpec) (Machine, error) {
	if err := CheckMachineName(spec.Name); err != nil {
		return Machine{}, err
	}
	if err := spec.Shape.check(); err != nil {
		return Machine{}, err
	}
	return Mutate(ctx, l, req, KindMachineAdd, spec, func(w *Writer) (Machine, error) {
		if _, ok, err := w.tx.Machine(spec.Name); err != nil {
			return Machine{}, err
		} else if ok {
			return Machine{}, fmt.Errorf("%w: machine %q", ErrExists, spec.Name)
		}
		m := Machine{Name: spec.Name, Description: spec.Description, Shape: spec.Shape, Active: true, Created: w.now}
		return m, putMachine(w, KindMachineAdd, m)
	})
}

// ModifyMachine changes a machine's description, node shape or active state.
func (l *Ledger) ModifyMachine(ctx context.Context, req Request, name string, change MachineChange) (Machine, error) {
	return Mutate(ctx, l, req, KindMachineModify, struct {
		Name   string        `json:"name"`
		Change MachineChange `json:"change"`
	}{name, change}, func(w *Writer) (Machine, error) {
		m, ok, err := w.tx.Machine(name)
		if err != nil {
			return Machine{}, err
		}
		if !ok {
			return Machine{}, fmt.Errorf("%w: no machine named %s", ErrNotFound, Excerpt(name))
		}
		if change.Description != nil {
			m.Description = *change.Description
		}
		for _, f := range []struct {
			to   *int64
			from *int64
		}{{&m.Shape.Cores, change.Cores}, {&m.Shape.MemoryMB, change.MemoryMB}, {&m.Shape.GPUs, change.GPUs}} {
			if f.from != nil {
				*f.to = *f.from
			}
		}
		if err := m.Shape.check(); err != nil {
			return Machine{}, err
		}
		if change.Active != nil {
			m.Active = *change.Active
		}
		return m, putMachine(w, KindMachineModify, m)
	})
}

func putMachine(w *Writer, kind Kind, m Machine) error {
	if err := w.tx.PutMachine(m); err != nil {
		return err
	}
	_, err := w.Append(Entry{Kind: kind, Machine: &m})
	return err
}

// Machines lists every machine in name order.
func (l *Ledger) Machines(ctx context.Context) ([]Machine, error) {
	var out []Machine
	err := l.store.View(ctx, func(tx Tx) (err error) {
		out, err = tx.Machines()
		return err
	})
	return out, err
}

// maxShape bounds a node's size far above any machine built; beyond it a
// number is a typo.
const maxShape = 1 << 40

func (s Shape) check() error {
	for _, f := range []struct {
		what string
		n    int64
	}{{"cores", s.Cores}, {"memory (MB)", s.MemoryMB}, {"GPUs", s.GPUs}} {
		if f.n < 0 || f.n > maxShape {
			return fmt.Errorf("%w: node shape: %s %d must be between 0 and %d", ErrInvalid, f.what, f.n, int64(maxShape))
		}
	}
	return nil
}
