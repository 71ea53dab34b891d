package server

import (
	"math/rand/v2"
	"testing"

	"github.com/ingot-hpc/ingot/internal/jsonbuf/jsontest"
	"github.com/ingot-hpc/ingot/proto/api"
)

// The bodies of a job's lien and charge as the scheduler's client sends them.
const (
	lienBody   = `{"machine":"hpc1","job_id":"x1","user":"amy","request":{"processors":4,"wallclock_limit_seconds":3600}}`
	chargeBody = `{"machine":"hpc1","job_id":"x1","usage":{"processors":4,"wallclock_seconds":1800,"wallclock_limit_seconds":3600,"state":"completed"}}`
)

// fastOf and strictOf are decodeFast and decodeStrict for one type.
func fastOf[T any](body []byte, v *T) bool    { return decodeFast(body, v) }
func strictOf[T any](body []byte, v *T) error { return decodeStrict(body, v) }

// sameDecoding checks decodeFast against decodeStrict on body.
func sameDecoding[T any](t testing.TB, what string, body []byte) bool {
	t.Helper()
	return jsontest.SameDecoding(t, what, body, fastOf[T], strictOf[T])
}

// TestDecodeFast wants decodeFast to read the requests of BenchmarkLoopback
// and every random request of plain values itself, and to decode every
// random request, and random changes of them, as encoding/json does or not
// at all.
func TestDecodeFast(t *testing.T) {
	if !sameDecoding[api.LienRequest](t, "lien", []byte(lienBody)) || !sameDecoding[api.ChargeRequest](t, "charge", []byte(chargeBody)) {
		t.Fatal("the fast decoder refuses the benchmark's requests")
	}
	r := rand.New(rand.NewPCG(1, 2))
	t.Run("lien", func(t *testing.T) { checkDecodeFast[api.LienRequest](t, r) })
	t.Run("charge", func(t *testing.T) { checkDecodeFast[api.ChargeRequest](t, r) })
}

func checkDecodeFast[T any](t *testing.T, r *rand.Rand) {
	jsontest.RandomDecodings(t, r, 2000, fastOf[T], strictOf[T])
}

// FuzzDecodeFast wants decodeFast to decode any body as decodeStrict does,
// or not at all.
func FuzzDecodeFast(f *testing.F) {
	for _, body := range []string{lienBody, chargeBody,
		`{"machine":"hpc1","job_id":"1","user":"amy","project":"p","request":{"processors":1,"nodes":2,"gpus":3,"memory_mb":4,"disk_mb":5,"qos":"q","partition":"p","node_type":"n","licenses":{"a":1,"b":2},"wallclock_limit_seconds":60,"start":"2026-11-22T10:16:11.83239Z"},"quote":7,"replace":true}`,
		`{"machine":"hpc1","job_id":"1","user":"amy","project":"p","usage":{"processors":1,"licenses":{},"wallclock_seconds":60,"cpu_seconds":1,"start":"2026-11-22T10:16:11Z","end":"2026-11-22T10:17:11Z","state":"timeout"},"incremental":true,"reservation":"r"}`,
		`{"machine":"hpc1","machine":"hpc2"}`, `{"Machine":"hpc1"}`, `{"machine":"h\u0070c1"}`, `{"quote":-0}`, `{"request":{"processors":1.0}}`, ` {} `, `{}{}`,
	} {
		f.Add(false, []byte(body))
		f.Add(true, []byte(body))
	}
	f.Fuzz(func(t *testing.T, charge bool, body []byte) {
		if charge {
			sameDecoding[api.ChargeRequest](t, "charge", body)
		} else {
			sameDecoding[api.LienRequest](t, "lien", body)
		}
	})
}

// BenchmarkDecode decodes the benchmark's lien and charge requests as the
// server does (fast) and with encoding/json alone (strict).
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name   string
		decode func([]byte, any) error
	}{
		{"fast", func(body []byte, v any) error { return (&call{body: body}).decode(v) }},
		{"strict", decodeStrict},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var place api.LienRequest
				var charge api.ChargeRequest
				if tc.decode([]byte(lienBody), &place) != nil || tc.decode([]byte(chargeBody), &charge) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
