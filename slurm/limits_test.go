package slurm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
)

func TestBillingOf(t *testing.T) {
	d := decimal.RequireFromString
	table := charge.RateTable{Rates: []charge.ChargeRate{
		{Type: charge.VBR, Name: "Processors", Rate: d("2")},
		{Type: charge.VBR, Name: "GPUs", Rate: d("10")},
		{Type: charge.VBR, Name: "Memory", Rate: d("0.001")},
		{Type: charge.NBM, Name: "QualityOfService", Instance: "premium", Rate: d("2")},
	}}
	b, err := BillingOf(table)
	if err != nil {
		t.Fatal(err)
	}
	if b.Weights != "CPU=1,GRES/gpu=5,Mem=0.0005" || !b.PerMinute.Equal(d("120")) || strings.Join(b.Approximate, ";") != "NBM QualityOfService=premium" {
		t.Errorf("billing = %+v", b)
	}
	for available, want := range map[string]int64{"1200": 10, "1199.99": 9, "0": 0, "-5": 0} {
		if got := b.Minutes(d(available)); got != want {
			t.Errorf("Minutes(%s) = %d, want %d", available, got, want)
		}
	}
	if _, err := BillingOf(charge.RateTable{}); err == nil || !strings.Contains(err.Error(), "no rate for Processors") {
		t.Errorf("a table without Processors: %v", err)
	}
}

func TestParseAssocBilling(t *testing.T) {
	// scontrol -o show assoc_mgr flags=assoc on Slurm 22.05 (cut).
	out := `Current Association Manager state
Association Records
ClusterName=ingot Account=root UserName= Partition= Priority=0 ID=1 GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(12),fs/disk=N(0)
ClusterName=ingot Account=tiny UserName= Partition= Priority=0 ID=3 GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=10(4),fs/disk=N(0)
ClusterName=ingot Account=tiny UserName=root(0) Partition= Priority=0 ID=4 GrpTRESMins=cpu=N(0),billing=N(4)
`
	got, err := ParseAssocBilling(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["root"] != (AssocBilling{Used: 12}) || got["tiny"] != (AssocBilling{Limit: "10", Used: 4}) {
		t.Errorf("ParseAssocBilling = %+v", got)
	}
	if _, err := ParseAssocBilling("ClusterName=c Account=a UserName= Partition= GrpTRESMins=billing=10"); err == nil {
		t.Error("billing without its usage was read")
	}
}

// TestSiteLimits: the limits sync --limits sets, from sacctmgr's and
// scontrol's output and the bank's balances.
func TestSiteLimits(t *testing.T) {
	b := &fakeBank{nodes: []string{"chem", "chem.lab1"}, available: decimal.NewFromInt(600)}
	site, out := testSite(b, nil)
	var set []string
	site.Run = func(_ context.Context, name string, args ...string) (string, error) {
		switch {
		case name == "sacctmgr" && args[0] == "-P":
			return "Cluster|Account|User|GrpSubmit\nhpc1|root||\nhpc1|chem||\nhpc1|lab1||\nhpc1|lab1|amy|\nhpc1|ghost||\nhpc1|guest||\nhpc1|own||5", nil
		case name == "scontrol":
			return "ClusterName=hpc1 Account=chem UserName= Partition= GrpTRESMins=cpu=N(0),billing=12(2)\n" +
				"ClusterName=hpc1 Account=lab1 UserName= Partition= GrpTRESMins=cpu=N(0),billing=N(2)", nil
		case name == "sacctmgr":
			set = append(set, strings.Join(args, " "))
			return "", nil
		}
		return "", fmt.Errorf("no %s", name)
	}
	if err := site.Limits(context.Background(), []string{"guest"}, false); err != nil {
		t.Fatal(err)
	}
	// 600 credits at 1 a CPU-second are 10 billing-minutes: chem has its
	// limit (2 used + 10), lab1 gets one; ghost, unknown, is closed; guest
	// is free, own has a limit of the site's, root is never touched.
	want := []string{"-i modify account where name=ghost cluster=hpc1 set GrpSubmitJobs=0", "-i modify account where name=lab1 cluster=hpc1 set GrpTRESMins=billing=12"}
	if strings.Join(set, "\n") != strings.Join(want, "\n") {
		t.Errorf("sacctmgr ran:\n%s\nwant:\n%s\nsaid:\n%s", strings.Join(set, "\n"), strings.Join(want, "\n"), out)
	}
	b.available = decimal.Zero
	set = nil
	if err := site.Limits(context.Background(), []string{"guest"}, true); err != nil || len(set) != 0 {
		t.Fatalf("a dry run ran %v: %v", set, err)
	}
	if !strings.Contains(out.String(), "would set GrpSubmitJobs=0: Slurm account lab1 takes no more jobs (chem.lab1: 0 available)") {
		t.Errorf("the dry run said:\n%s", out)
	}
}
