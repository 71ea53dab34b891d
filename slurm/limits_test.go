package slurm

import (
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
