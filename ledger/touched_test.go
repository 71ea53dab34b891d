package ledger

import (
	"slices"
	"testing"
)

// TestTouchedAccounts: every account an entry changes, each once, in the
// order the entry names them (their versions are set in that order).
func TestTouchedAccounts(t *testing.T) {
	for _, tc := range []struct {
		what    string
		e       Entry
		oldLien *Lien
		want    []string
	}{
		{"a transfer", Entry{Kind: KindTransfer, Node: "chem.lab1", Ref: "bio", Deltas: []Delta{{Account: "chem"}, {Account: "bio"}}}, nil, []string{"chem", "bio"}},
		{"a charge", Entry{Kind: KindCharge, Node: "chem.lab1", Ref: "job-1", Lien: &Lien{JobRef: JobRef{Account: "chem"}}, Charge: &Charge{JobRef: JobRef{Account: "chem"}}}, nil, []string{"chem"}},
		{"a lien that fell back from another account", Entry{Kind: KindLienPlace, Node: "bio", Ref: "job-2", Lien: &Lien{JobRef: JobRef{Account: "bio"}}}, &Lien{JobRef: JobRef{Account: "chem"}}, []string{"bio", "chem"}},
		{"a new account", Entry{Kind: KindNodeCreate, Node: "phys", NodeState: &Node{Name: "phys"}}, nil, []string{"phys"}},
		{"the bank's settings", Entry{Kind: KindInit}, nil, []string{}},
	} {
		if got := touchedAccounts(tc.e, tc.oldLien); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}
}
