package client

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/ingot-hpc/ingot/internal/jsonbuf/jsontest"
	"github.com/ingot-hpc/ingot/lien"
)

// The answers to a job's lien and charge (BenchmarkLoopback's).
const (
	lienAnswer   = `{"lien":{"id":1,"job_id":"x1","machine":"hpc1","project":"chem.lab1","account":"chem","user":"amy","amount":"14400","holds":[{"allocation":1,"amount":"14400"}],"charged":"0","created":"2026-11-22T10:16:11.83239Z","expires":"2026-11-22T11:26:11.83239Z","state":"active","detail":{"request":{"processors":4,"wallclock_limit_seconds":3600,"start":"2026-11-22T10:16:11.83239Z"},"policy":"DEBITSUCCESSFULWC","quoted":"14400"}},"project":"chem.lab1","fell_back":false,"requested_project":"chem.lab1","quote":{"credits":"14400","explanation":{"subject":"quote","policy":"DEBITSUCCESSFULWC","basis":["Processors = 4 dedicated","WallDuration = 3600 s","ConsumptionRate = 1"],"items":[{"type":"VBR","what":"Processors","quantity":"4","rate":"1","seconds":3600,"multiplier":"1","subtotal":"14400"}],"time_scaled":"14400","usage":"0","multiplier":"1","fees":"0","exact":"14400","precision":2}}}`
	chargeAnswer = `{"charge":{"id":1,"job_id":"x1","machine":"hpc1","project":"chem.lab1","account":"chem","user":"amy","lien":1,"amount":"7200","debits":[{"allocation":1,"amount":"7200"}],"overdrawn":"0","refunded":"0","final":true,"time":"2026-11-22T10:16:11.836975Z","detail":{"usage":{"processors":4,"wallclock_seconds":1800,"wallclock_limit_seconds":3600,"state":"completed"},"explanation":{"subject":"charge","policy":"DEBITSUCCESSFULWC","state":"completed","basis":["Processors = 4 dedicated","WallDuration = 1800 s","ConsumptionRate = 1"],"items":[{"type":"VBR","what":"Processors","quantity":"4","rate":"1","seconds":1800,"multiplier":"1","subtotal":"7200"}],"time_scaled":"7200","usage":"0","multiplier":"1","fees":"0","exact":"7200","precision":2}}},"lien":{"id":1,"job_id":"x1","machine":"hpc1","project":"chem.lab1","account":"chem","user":"amy","amount":"14400","holds":[{"allocation":1,"amount":"14400"}],"charged":"7200","created":"2026-11-22T10:16:11.83239Z","expires":"2026-11-22T11:26:11.83239Z","state":"settled","detail":{"request":{"processors":4,"wallclock_limit_seconds":3600,"start":"2026-11-22T10:16:11.83239Z"},"policy":"DEBITSUCCESSFULWC","quoted":"14400"}},"overran":"0","released":"7200"}`
)

func fastOf[T any](raw []byte, v *T) bool    { return decodeFast(raw, v) }
func strictOf[T any](raw []byte, v *T) error { return json.Unmarshal(raw, v) }

// sameDecoding checks decodeFast against json.Unmarshal on raw.
func sameDecoding[T any](t testing.TB, what string, raw []byte) bool {
	t.Helper()
	return jsontest.SameDecoding(t, what, raw, fastOf[T], strictOf[T])
}

// TestDecodeFast wants decodeFast to read the answers of BenchmarkLoopback
// and every random answer of plain values itself, and to decode every
// random answer, and random changes of them, as json.Unmarshal does or not
// at all.
func TestDecodeFast(t *testing.T) {
	if !sameDecoding[lien.LienResult](t, "lien", []byte(lienAnswer)) || !sameDecoding[lien.ChargeResult](t, "charge", []byte(chargeAnswer)) {
		t.Fatal("the fast decoder refuses the benchmark's answers")
	}
	r := rand.New(rand.NewPCG(1, 2))
	t.Run("lien", func(t *testing.T) { checkDecodeFast[lien.LienResult](t, r) })
	t.Run("charge", func(t *testing.T) { checkDecodeFast[lien.ChargeResult](t, r) })
}

func checkDecodeFast[T any](t *testing.T, r *rand.Rand) {
	jsontest.RandomDecodings(t, r, 1000, fastOf[T], strictOf[T])
}

// FuzzDecodeFast wants decodeFast to decode any answer as json.Unmarshal
// does, or not at all.
func FuzzDecodeFast(f *testing.F) {
	for _, raw := range []string{lienAnswer, chargeAnswer, `{"lien":null}`, `{"charge":{"id":1,"ID":2}}`, `{"overran":7200}`,
		`{"explanation":{"precision":2147483648,"basis":[]}}`, `{"quote":{"credits":"1e3"}}`} {
		f.Add(false, []byte(raw))
		f.Add(true, []byte(raw))
	}
	f.Fuzz(func(t *testing.T, charge bool, raw []byte) {
		if charge {
			sameDecoding[lien.ChargeResult](t, "charge", raw)
		} else {
			sameDecoding[lien.LienResult](t, "lien", raw)
		}
	})
}

// BenchmarkDecode decodes the benchmark's lien and charge answers as the
// client does (fast) and with json.Unmarshal alone (strict).
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"strict", false}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var l lien.LienResult
				var c lien.ChargeResult
				if tc.fast && decodeFast([]byte(lienAnswer), &l) && decodeFast([]byte(chargeAnswer), &c) {
					continue
				}
				if json.Unmarshal([]byte(lienAnswer), &l) != nil || json.Unmarshal([]byte(chargeAnswer), &c) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
