package lien_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// FuzzForwardedAnswer: whatever a home bank answers a forwarded charge or
// refund with, the site's answer is made without a panic, or refused as
// corrupt; made, its own figures are the site's (the price, the amount
// asked) and the home bank's are divided by the ratio, to 2 places.
func FuzzForwardedAnswer(f *testing.F) {
	for _, s := range []string{
		`{"charge":{"id":1,"amount":"200","overdrawn":"3"},"lien":{"id":2,"amount":"400","charged":"200","state":"settled"},"overran":"0","released":"200"}`,
		`{"refunded":"7.01","charges":[]}`, `{"overran":"1e400"}`, `{"lien":null}`, `[]`, ``,
	} {
		f.Add(s)
	}
	ratio := decimal.NewFromInt(2)
	price := decimal.RequireFromString("100")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // no answer: the home bank has not answered yet
		}
		fw := lien.Forwarded{Peer: "central", Project: "chem.lab", RateRatio: ratio, Transaction: "tx-1", State: "done", Answer: json.RawMessage(s)}
		h := &lien.HomedError{Home: ledger.Home{Peer: "central", Project: "chem.lab", RateRatio: ratio}, Job: ledger.JobRef{JobID: "1", Machine: "hpc1"}, Amount: charge.Amount{Credits: price}, Final: true}
		if r, err := h.ForwardedCharge(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), fw, 2); err == nil {
			var home lien.ChargeResult
			if json.Unmarshal([]byte(s), &home) != nil {
				t.Fatalf("%q: answered from an answer that does not decode", s)
			}
			if !r.Charge.Amount.Equal(price) || !r.Released.Equal(home.Released.DivRound(ratio, 2)) || r.Home == nil || string(r.Home.Answer) != s {
				t.Fatalf("%q: %+v", s, r)
			}
		}
		if r, err := lien.ForwardedRefund(decimal.Zero, fw, 2); err == nil {
			var home lien.JobRefund
			if json.Unmarshal([]byte(s), &home) != nil || !r.Refunded.Equal(home.Refunded.DivRound(ratio, 2)) {
				t.Fatalf("%q: refund answered %+v", s, r)
			}
		}
		if r, err := lien.ForwardedRefund(price, fw, 2); err != nil || !r.Refunded.Equal(price) {
			t.Fatalf("%q: a refund of an amount asked: %+v %v", s, r, err)
		}
	})
}
