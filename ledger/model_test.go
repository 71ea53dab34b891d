package ledger

import (
	"encoding/json"
	"maps"
	"testing"
	"time"
)

// TestPolicyRecordsOfOlderBanks: a node record written before ownership,
// group non-shared, priority and the preemption order existed reads with
// none of them set and encodes to the same bytes, so that a bank's older
// records and journal entries stay as they were; one with them set keeps
// them.
func TestPolicyRecordsOfOlderBanks(t *testing.T) {
	for _, c := range []struct {
		name, record string
		owners       bool
	}{
		{"project of an older bank", `{"name":"chem.lab1","active":true,"policy":{"quota_kind":"dynamic","quota":"0.6","non_shared":"0"},"created":"2026-01-05T09:00:00Z"}`, false},
		{"account of an older bank", `{"name":"chem","active":true,"policy":{"quota":"0","non_shared":"0"},"created":"2026-01-05T09:00:00Z"}`, false},
		{"owner", `{"name":"chem.lab1","active":true,"policy":{"quota":"0","non_shared":"0","ownership":"400","priority":2},"created":"2026-01-05T09:00:00Z"}`, true},
		{"group", `{"name":"chem.g","active":true,"policy":{"quota":"0","non_shared":"0","group_non_shared":"50"},"created":"2026-01-05T09:00:00Z"}`, true},
		{"account preempting bottom-up", `{"name":"chem","active":true,"policy":{"quota":"0","non_shared":"0","preemption":"bottom-up"},"created":"2026-01-05T09:00:00Z"}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n Node
			if err := json.Unmarshal([]byte(c.record), &n); err != nil {
				t.Fatal(err)
			}
			p := n.Policy
			if set := !p.Ownership.IsZero() || !p.GroupNonShared.IsZero() || p.Priority != 0 || p.Preemption != ""; set != c.owners {
				t.Errorf("%+v: owners' settings %v, want %v", p, set, c.owners)
			}
			again, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != c.record {
				t.Errorf("encoded again:\n%s\nwant\n%s", again, c.record)
			}
		})
	}
}

// TestNumberAccounts: accounts are numbered in the order they were made,
// the name breaking a tie; projects have no number.
func TestNumberAccounts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got := NumberAccounts([]Node{
		{Name: "zoo", Created: t0}, {Name: "chem", Created: t0.Add(time.Hour)}, {Name: "chem.lab1", Created: t0.Add(2 * time.Hour)},
		{Name: "bio", Created: t0.Add(time.Hour)}, {Name: "art", Created: t0.Add(3 * time.Hour)},
	})
	want := map[string]uint64{"zoo": 1, "bio": 2, "chem": 3, "art": 4}
	if !maps.Equal(got, want) {
		t.Errorf("numbers %v, want %v", got, want)
	}
}
