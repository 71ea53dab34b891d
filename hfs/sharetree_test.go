package hfs

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// shareTreeCases is the layout of testdata/hfs/sharetree-cases.json.
type shareTreeCases struct {
	Decay []struct {
		ID            string  `json:"id"`
		InitialUsage  float64 `json:"initial_usage"`
		HalftimeHours float64 `json:"halftime_hours"`
		ElapsedDays   float64 `json:"elapsed_days"`
		Expected      struct {
			IdealExponential float64 `json:"ideal_exponential"`
		} `json:"expected"`
	} `json:"decay"`
	Entitlement []struct {
		ID       string        `json:"id"`
		Tree     shareTreeJSON `json:"tree"`
		Expected map[string]map[string]struct {
			LTT  float64 `json:"ltt"`
			OLTT float64 `json:"oltt"`
			OSTT float64 `json:"ostt"`
		} `json:"expected_by_compensation_factor"`
	} `json:"entitlement"`
}

type shareTreeJSON struct {
	Name       string          `json:"name"`
	Shares     float64         `json:"shares"`
	Usage      float64         `json:"usage"`
	ActiveJobs int             `json:"active_jobs"`
	Children   []shareTreeJSON `json:"children"`
}

func (s shareTreeJSON) node(at time.Time) *ShareNode {
	n := &ShareNode{Name: s.Name, Shares: s.Shares, Usage: s.Usage, UsageAt: at, ActiveJobs: s.ActiveJobs}
	for _, c := range s.Children {
		n.Children = append(n.Children, c.node(at))
	}
	return n
}

const shareTreeTolerance = 1e-6

func loadShareTreeCases(t *testing.T) shareTreeCases {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "hfs", "sharetree-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases shareTreeCases
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases.Decay) == 0 || len(cases.Entitlement) == 0 {
		t.Fatal("sharetree-cases.json: no cases")
	}
	return cases
}

func TestDecayReferenceCases(t *testing.T) {
	for _, c := range loadShareTreeCases(t).Decay {
		t.Run(c.ID, func(t *testing.T) {
			hour := float64(time.Hour)
			got := Decay(c.InitialUsage, time.Duration(c.ElapsedDays*24*hour), time.Duration(c.HalftimeHours*hour))
			if math.Abs(got-c.Expected.IdealExponential) > shareTreeTolerance {
				t.Fatalf("Decay = %.9f, want %.9f", got, c.Expected.IdealExponential)
			}
		})
	}
}

func TestEntitlementReferenceCases(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	for _, c := range loadShareTreeCases(t).Entitlement {
		for cfText, want := range c.Expected {
			t.Run(c.ID+"/cf="+cfText, func(t *testing.T) {
				cf, err := strconv.ParseFloat(cfText, 64)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Entitlements(c.Tree.node(now), now, 7*24*time.Hour, cf)
				if err != nil {
					t.Fatal(err)
				}
				for name, w := range want {
					g := got[name]
					for _, v := range []struct {
						what      string
						got, want float64
					}{{"ltt", g.LongTerm, w.LTT}, {"oltt", g.OverallLongTerm, w.OLTT}, {"ostt", g.OverallShortTerm, w.OSTT}} {
						if math.Abs(v.got-v.want) > shareTreeTolerance {
							t.Errorf("%s %s = %.9f, want %.9f", name, v.what, v.got, v.want)
						}
					}
				}
			})
		}
	}
}

// TestEntitlementShapes checks what the reference cases leave out: decay
// of recorded usage, inactive nodes, job priority, zero shares.
func TestEntitlementShapes(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	root := &ShareNode{Name: "acct", Shares: 1, Children: []*ShareNode{
		// 2000 recorded a week ago: 1000 now.
		{Name: "a", Shares: 1, Usage: 2000, UsageAt: now.Add(-week), ActiveJobs: 2},
		{Name: "b", Shares: 1, Usage: 1000, UsageAt: now, ActiveJobs: 1},
		{Name: "idle", Shares: 8, Usage: 5, UsageAt: now},
		{Name: "none", Shares: 0, ActiveJobs: 1},
	}}
	got, err := Entitlements(root, now, week, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		got, want        float64
		derivationOfWant string
	}{
		{"a usage", got["a"].Usage, 1000, "2000 · 0.5^(1 week / 1 week)"},
		{"acct usage", got["acct"].Usage, 2005, "1000 + 1000 + 5, idle nodes' usage counts too"},
		{"a ltt", got["a"].LongTerm, 0.5, "1/(1+1+0): idle is not active, none has 0 shares"},
		{"idle ltt", got["idle"].LongTerm, 0, "inactive"},
		{"none ostt", got["none"].OverallShortTerm, 0, "no shares, no entitlement"},
		{"a ostt", got["a"].OverallShortTerm, 0.5, "equal weights 1/1000 each"},
		{"a job priority", got["a"].JobPriority, 0.25, "0.5 over 2 jobs"},
		{"b job priority", got["b"].JobPriority, 0.5, "0.5 over 1 job"},
		{"acct job priority", got["acct"].JobPriority, 0, "no jobs of its own"},
	} {
		if math.Abs(tc.got-tc.want) > shareTreeTolerance {
			t.Errorf("%s = %v, want %v (%s)", tc.name, tc.got, tc.want, tc.derivationOfWant)
		}
	}
	if got["idle"].Active || !got["acct"].Active {
		t.Errorf("active: idle %v, acct %v", got["idle"].Active, got["acct"].Active)
	}
}

func TestDecayEdges(t *testing.T) {
	if got := Decay(100, time.Hour, 0); got != 100 {
		t.Errorf("half-life 0: %v, want no decay", got)
	}
	if got := Decay(100, -time.Hour, time.Hour); got != 100 {
		t.Errorf("negative elapsed: %v, want no growth", got)
	}
}

func TestEntitlementErrors(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name     string
		root     *ShareNode
		halfLife time.Duration
		cf       float64
		want     error
	}{
		{"nil root", nil, 0, 0, ErrNilNode},
		{"empty name", &ShareNode{}, 0, 0, ErrEmptyName},
		{"negative shares", &ShareNode{Name: "a", Shares: -1}, 0, 0, ErrNegative},
		{"NaN usage", &ShareNode{Name: "a", Usage: math.NaN()}, 0, 0, ErrNotFinite},
		{"duplicate", &ShareNode{Name: "a", Children: []*ShareNode{{Name: "a"}}}, 0, 0, ErrDuplicateName},
		{"nil child", &ShareNode{Name: "a", Children: []*ShareNode{nil}}, 0, 0, ErrNilNode},
		{"negative half-life", &ShareNode{Name: "a"}, -time.Hour, 0, ErrNegative},
		{"negative cf", &ShareNode{Name: "a"}, 0, -1, ErrNegative},
		{"infinite cf", &ShareNode{Name: "a"}, 0, math.Inf(1), ErrNotFinite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Entitlements(tc.root, now, tc.halfLife, tc.cf); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}
