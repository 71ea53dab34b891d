package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
)

func TestParseTRES(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want TRES
		err  string
	}{
		{in: "cpu=4,mem=1000M,node=1,billing=4,gres/gpu=1", want: TRES{"cpu": 4, "mem": 1000, "node": 1, "billing": 4, "gres/gpu": 1}},
		{in: "cpu=2,mem=1.5G", want: TRES{"cpu": 2, "mem": 1536}},
		{in: "mem=1K", want: TRES{"mem": 1}},
		{in: "mem=2048", want: TRES{"mem": 2048}},
		{in: "", want: TRES{}},
		{in: "(null)", want: TRES{}},
		{in: "cpu=-1", err: `"cpu=-1" is not a whole number`},
		{in: "cpu=1,cpu=2", err: `"cpu" given twice`},
		{in: "cpu", err: `item "cpu" is not NAME=COUNT`},
		{in: "mem=1e9G", err: "not an amount of memory"},
		{in: "mem=99999999999T", err: "too large"},
	} {
		got, err := ParseTRES(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTRES(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseTRES(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ParseTRES(%q)[%s] = %d, want %d", tc.in, k, got[k], v)
			}
		}
	}
	typed, _ := ParseTRES("cpu=1,gres/gpu:a100=2,gres/gpu:v100=1")
	if r := typed.Resources("normal", "debug"); r.GPUs != 3 || r.Processors != 1 || r.QOS != "normal" || r.Partition != "debug" {
		t.Errorf("typed GPUs: %+v", r)
	}
}

var sacctSample = SacctHeader() + `
7|test|chem|amy|debug|normal|billing=1,cpu=1,mem=100M,node=1|2|5|2026-11-26T13:53:38|2026-11-26T13:53:40|COMPLETED|0:0|7|2026-11-26T13:53:38
8|test|chem|amy|debug|normal|billing=1,cpu=1,node=1|1|UNLIMITED|2026-11-26T13:54:00|2026-11-26T13:54:01|FAILED|3:0|8|2026-11-26T13:54:00
9|test|chem|amy|debug|normal||0|5|None|2026-11-26T13:55:00|CANCELLED by 0|0:0|9|2026-11-26T13:55:00
10|test|chem|amy|debug|normal|billing=2,cpu=2,node=1,gres/gpu=1|0|5|2026-11-26T13:56:00|Unknown|RUNNING|0:0|10|2026-11-26T13:56:00
`

func TestParseSacct(t *testing.T) {
	jobs, err := ParseSacct(sacctSample, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 {
		t.Fatalf("%d jobs", len(jobs))
	}
	j := jobs[0]
	if j.ID != "7" || j.Account != "chem" || j.User != "amy" || j.Elapsed != 2 || j.TimeLimit != 300 || j.State != "COMPLETED" ||
		j.ExitCode != "0:0" || j.TRES["mem"] != 100 || !j.End.Equal(time.Date(2026, 11, 26, 13, 53, 40, 0, time.UTC)) {
		t.Errorf("job 7 = %+v", j)
	}
	if jobs[1].TimeLimit != 0 || jobs[1].ExitCode != "3:0" || jobs[1].State != "FAILED" {
		t.Errorf("job 8 = %+v", jobs[1])
	}
	if !jobs[2].Start.IsZero() || jobs[2].State != "CANCELLED" {
		t.Errorf("job 9 = %+v", jobs[2])
	}
	if !jobs[3].End.IsZero() || jobs[3].TRES.GPUs() != 1 {
		t.Errorf("job 10 = %+v", jobs[3])
	}
	if _, err := charge.ParseExitState(jobs[2].State); err != nil {
		t.Errorf("Slurm's state %s is not an exit state: %v", jobs[2].State, err)
	}
	for _, bad := range []struct{ out, says string }{
		{"", "no header line"},
		{"JobIDRaw|State\n1|COMPLETED", "has no column Cluster"},
		{SacctHeader() + "\n7|test|chem", "line 2 has 3 fields"},
		{SacctHeader() + "\n7|test|chem|amy|debug|normal||x|5|None|None|PENDING|0:0|1|None", `ElapsedRaw "x"`},
		{SacctHeader() + "\n7|test|chem|amy|debug|normal||0|5|yesterday|None|PENDING|0:0|1|None", `Start "yesterday"`},
	} {
		if _, err := ParseSacct(bad.out, time.UTC); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("ParseSacct(%q) error %v, want %q", bad.out, err, bad.says)
		}
	}
}

func TestAccountTree(t *testing.T) {
	if _, err := ParseAssoc("Cluster|Account|User|ParentName\ntest|root|||\n"); err == nil {
		t.Fatal("a line with five fields under four columns was read")
	}
	as, err := ParseAssoc("Cluster|Account|User|ParentName\ntest|root||\ntest|root|root|\ntest|chem||root\ntest|lab1||chem\ntest|lab1|amy|\ntest|bio||root\nother|lab9||chem\n")
	if err != nil {
		t.Fatal(err)
	}
	tree := AccountTree(as, "test")
	for account, want := range map[string]string{"chem": "chem", "lab1": "chem.lab1", "bio": "bio"} {
		if got, err := tree.Path(account); got != want || err != nil {
			t.Errorf("Path(%s) = %q, %v; want %q", account, got, err, want)
		}
	}
	if _, err := tree.Path("lab9"); err == nil {
		t.Error("an account of another cluster has a path")
	}
	if users := tree.Users["lab1"]; len(users) != 1 || users[0] != "amy" {
		t.Errorf("users of lab1 = %v", users)
	}
	loop := Tree{Parent: map[string]string{"a": "b", "b": "a"}}
	if _, err := loop.Path("a"); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("a loop: %v", err)
	}
	defaults, err := ParseUsers("User|Def Acct|Admin\namy|lab1|None\nroot|root|Administrator\n")
	if err != nil || defaults["amy"] != "lab1" {
		t.Errorf("ParseUsers = %v, %v", defaults, err)
	}
}

func FuzzParseTRES(f *testing.F) {
	for _, s := range []string{"cpu=4,mem=1000M,node=1,billing=4,gres/gpu=1", "mem=1.5G", "", "cpu=-1", "gres/gpu:a100=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tres, err := ParseTRES(s)
		if err != nil {
			return
		}
		for name, n := range tres {
			if n < 0 {
				t.Errorf("ParseTRES(%q)[%s] = %d", s, name, n)
			}
		}
	})
}

func FuzzParseSacct(f *testing.F) {
	f.Add(sacctSample)
	f.Add(SacctHeader() + "\n7|test|chem")
	f.Fuzz(func(t *testing.T, out string) {
		jobs, err := ParseSacct(out, time.UTC)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == "" || j.State == "" || j.Elapsed < 0 || j.TimeLimit < 0 {
				t.Errorf("ParseSacct accepted %+v", j)
			}
		}
	})
}

func FuzzParseAssoc(f *testing.F) {
	f.Add("Cluster|Account|User|ParentName\ntest|root||\ntest|chem||root\ntest|lab1|amy|\n")
	f.Fuzz(func(t *testing.T, out string) {
		as, err := ParseAssoc(out)
		if err != nil {
			return
		}
		tree := AccountTree(as, "test")
		for a := range tree.Parent {
			if p, err := tree.Path(a); err == nil && !strings.HasSuffix(p, a) {
				t.Errorf("Path(%q) = %q", a, p)
			}
		}
	})
}

// The default columns of `sacctmgr -P show assoc` on Debian's 22.05
// (internal/slurmtest's sample), with a limit set on acct.
func TestParseSubmitLimits(t *testing.T) {
	limits, err := ParseSubmitLimits(`Cluster|Account|User|Partition|Share|Priority|GrpJobs|GrpTRES|GrpSubmit|GrpWall|GrpTRESMins|MaxJobs|MaxTRES|MaxTRESPerNode|MaxSubmit|MaxWall|MaxTRESMins|QOS|Def QOS|GrpTRESRunMins
ingot|root|||1|||||||||||||normal||
ingot|acct|||1||||0|||||||||normal||
ingot|acct|root||1|||||||||||||normal||
ingot|sub|||1|||||||||||||normal||
`)
	if err != nil || len(limits) != 3 || limits["acct"] != "0" || limits["sub"] != "" {
		t.Errorf("ParseSubmitLimits = %v, %v", limits, err)
	}
	if _, err := ParseSubmitLimits("Cluster|Account|User\nx|y|z\n"); err == nil {
		t.Error("a table without GrpSubmit was read")
	}
}
