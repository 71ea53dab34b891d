package lien

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
)

// TestPricedAheadOnlyWhenTheSame: the writer takes a price made ahead only
// for the very same rate table (one decoded record), policy and shape, and
// no quote; otherwise it prices again.
func TestPricedAheadOnlyWhenTheSame(t *testing.T) {
	table, err := charge.DefaultRateTable().Compile()
	if err != nil {
		t.Fatal(err)
	}
	pr := pricing{rates: table, policy: charge.DebitSuccessfulWC, shape: charge.Shape{Cores: 32}}
	usage := charge.Usage{Resources: charge.Resources{Processors: 2}, WallclockSeconds: 10, WallclockLimitSeconds: 60, State: charge.Completed}
	// A price no pricing gives, so that its use shows.
	marked := pricedAhead{pr: pr, amount: charge.Amount{Credits: decimal.NewFromInt(-1)}, ok: true}

	copied, err := charge.DefaultRateTable().Compile() // equal, but another decoding
	if err != nil {
		t.Fatal(err)
	}
	quoted := pr
	quoted.quote = 7
	for _, tc := range []struct {
		what      string
		now       pricing
		usesAhead bool
	}{
		{"the same pricing", pr, true},
		{"an equal table decoded again", pricing{rates: copied, policy: pr.policy, shape: pr.shape}, false},
		{"another policy", pricing{rates: table, policy: charge.DebitAllCPU, shape: pr.shape}, false},
		{"another shape", pricing{rates: table, policy: pr.policy, shape: charge.Shape{Cores: 64}}, false},
		{"a quote's table", quoted, false},
	} {
		got, err := marked.price(chargeTerms{pr: tc.now, usage: usage})
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if usedAhead := got.Credits.Equal(decimal.NewFromInt(-1)); usedAhead != tc.usesAhead {
			t.Errorf("%s: price %s; the price made ahead used: %v, want %v", tc.what, got.Credits, usedAhead, tc.usesAhead)
		}
	}
	if got, err := (pricedAhead{}).price(chargeTerms{pr: pr, usage: usage}); err != nil || !got.Credits.Equal(decimal.NewFromInt(20)) {
		t.Errorf("nothing priced ahead: %s %v; want 20 (2 processors × 10 s)", got.Credits, err)
	}
}
