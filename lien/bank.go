package lien

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// Bank runs liens, charges, quotes and reservations on a ledger.
type Bank struct {
	l      *ledger.Ledger
	rates  decoded[*charge.CompiledTable]
	config decoded[Config]
}

// New returns the lien layer of a ledger.
func New(l *ledger.Ledger) *Bank {
	return &Bank{l: l}
}

// Ledger is the ledger below.
func (b *Bank) Ledger() *ledger.Ledger { return b.l }

// Job names a job: its id on a machine.
type Job struct {
	Machine string `json:"machine"`
	ID      string `json:"job_id"`
}

func (j Job) check() error {
	if j.ID == "" || len(j.ID) > 255 || strings.IndexFunc(j.ID, func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' }) >= 0 {
		return fmt.Errorf("%w: job id %q must be 1 to 255 printable characters without spaces", ledger.ErrInvalid, j.ID)
	}
	if j.Machine == "" {
		return fmt.Errorf("%w: job %s names no machine", ledger.ErrInvalid, j.ID)
	}
	return nil
}

// who is the resolved party to a lien or charge.
type who struct {
	user    ledger.User
	project ledger.Node
	machine ledger.Machine
}

// resolve checks the machine and user, picks the project (the user's
// default when none is named) and checks the user may use it. Only a lien
// needs the project active: a charge is for work already done.
func resolve(tx ledger.Tx, machine, userName, project string, forLien bool) (who, error) {
	var w who
	m, ok, err := tx.Machine(machine)
	if err != nil || !ok {
		return w, notFound(err, "no machine named %q", machine)
	}
	if forLien && !m.Active {
		return w, fmt.Errorf("%w: machine %q is deactivated", ledger.ErrInactive, machine)
	}
	u, ok, err := tx.User(userName)
	if err != nil || !ok {
		return w, notFound(err, "no user named %q", userName)
	}
	if forLien && !u.Active {
		return w, fmt.Errorf("%w: user %q is deactivated", ledger.ErrInactive, userName)
	}
	if project == "" {
		project = u.DefaultProject
	}
	if project == "" {
		return w, fmt.Errorf("%w: the job names no project and user %s has no default project", ErrNoProject, u.Name)
	}
	getNode := ledger.GetNode
	if forLien {
		getNode = ledger.ActiveNode
	}
	n, err := getNode(tx, project)
	if err != nil {
		return w, err
	}
	if !n.AnyUser && u.RoleIn(project) == "" && !anyUserAbove(tx, project) {
		return w, fmt.Errorf("%w: user %s may not use %s", ErrNotMember, u.Name, project)
	}
	return who{user: u, project: n, machine: m}, nil
}

// anyUserAbove reports whether an ancestor of project admits any user.
func anyUserAbove(tx ledger.Tx, project string) bool {
	for p := ledger.ParentOf(project); p != ""; p = ledger.ParentOf(p) {
		if n, ok, err := tx.Node(p); err == nil && ok && n.AnyUser {
			return true
		}
	}
	return false
}

func shapeOf(m ledger.Machine) charge.Shape {
	return charge.Shape{Cores: m.Shape.Cores, MemoryMB: m.Shape.MemoryMB, GPUs: m.Shape.GPUs}
}

// pricing is what prices a job: the compiled rate table, policy and node
// shape, from a guaranteed quote when the job uses one.
type pricing struct {
	rates  *charge.CompiledTable
	policy charge.Policy
	shape  charge.Shape
	quote  uint64
}

// quotePricing is the pricing a guaranteed quote froze.
func quotePricing(q StoredQuote) (pricing, error) {
	rates, err := q.Table.Compile()
	return pricing{rates: rates, policy: q.Policy, shape: q.Shape, quote: q.ID}, err
}

func (b *Bank) pricing(tx ledger.Tx, cfg Config, p who) (pricing, error) {
	t, err := b.pricingRates(tx)
	return pricing{rates: t, policy: cfg.policyFor(p.project.Name, p.machine.Name), shape: shapeOf(p.machine)}, err
}
