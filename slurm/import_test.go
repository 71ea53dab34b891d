package slurm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// refusingBank has nodes but may not read users, as a scheduler's key.
type refusingBank struct{ created []string }

func (b *refusingBank) Nodes(context.Context, string) ([]ledger.Node, error) {
	return []ledger.Node{{Name: "chem"}}, nil
}

func (b *refusingBank) CreateNode(_ context.Context, _ ledger.Request, spec ledger.NodeSpec) (ledger.Node, error) {
	b.created = append(b.created, spec.Name)
	return ledger.Node{Name: spec.Name}, nil
}

func (b *refusingBank) Users(context.Context) ([]ledger.User, error) {
	return nil, errors.New("forbidden: client slurm-hpc1 may not GET /v1/users")
}

func (b *refusingBank) AddUser(context.Context, ledger.Request, ledger.UserSpec) (ledger.User, error) {
	return ledger.User{}, errors.New("no")
}

func (b *refusingBank) ModifyUser(context.Context, ledger.Request, string, ledger.UserChange) (ledger.User, error) {
	return ledger.User{}, errors.New("no")
}

// TestImportRefusedBeforeItPrints: a key that may not read the users
// fails the import before any line of the plan is printed or any node made.
func TestImportRefusedBeforeItPrints(t *testing.T) {
	tree := AccountTree([]Assoc{{Cluster: "hpc1", Account: "chem", Parent: "root"}, {Cluster: "hpc1", Account: "lab1", Parent: "chem"},
		{Cluster: "hpc1", Account: "lab1", User: "amy"}}, "hpc1")
	plan, err := PlanImport(tree, map[string]string{"amy": "lab1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		b := &refusingBank{}
		var out bytes.Buffer
		err := plan.Apply(context.Background(), b, func() ledger.Request { return ledger.Request{ID: "x"} }, &out, dry)
		if err == nil || !strings.Contains(err.Error(), "needs the admin's key") || out.Len() != 0 || len(b.created) != 0 {
			t.Errorf("dry %v: %v; printed %q, created %v", dry, err, out.String(), b.created)
		}
	}
}
