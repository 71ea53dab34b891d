package lien

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ingot-hpc/ingot/internal/jsonbuf/jsontest"
	"github.com/ingot-hpc/ingot/internal/jsonread"
	"github.com/ingot-hpc/ingot/ledger"
)

// detailOfBenchmark is a lien's detail as BenchmarkCycle's liens have it.
const detailOfBenchmark = `{"request":{"processors":4,"wallclock_limit_seconds":3600,"start":"2026-01-05T09:00:00Z"},"policy":"DEBITSUCCESSFULWC","quoted":"14400"}`

// fastDetail is DetailOf's first way (readDetail, a zero value when it
// gives up); strictDetail is its fallback.
func fastDetail(data []byte, v *Detail) bool {
	r := jsonread.New(data)
	if readDetail(r, v); r.End() {
		return true
	}
	*v = Detail{}
	return false
}

func strictDetail(data []byte, v *Detail) error { return json.Unmarshal(data, v) }

// TestDetailOf wants readDetail to read a benchmark lien's detail and every
// random detail of plain values itself, to decode random details and random
// changes of them as encoding/json does or not at all, and DetailOf to give
// encoding/json's value or error either way.
func TestDetailOf(t *testing.T) {
	if !jsontest.SameDecoding(t, "benchmark", []byte(detailOfBenchmark), fastDetail, strictDetail) {
		t.Fatal("readDetail refuses the detail of a benchmark's lien")
	}
	jsontest.RandomDecodings(t, rand.New(rand.NewPCG(3, 4)), 2000, fastDetail, strictDetail)
	for _, data := range []string{detailOfBenchmark, `{"policy":"NOSUCHPOLICY"}`, `{"quoted":"x"}`, `{"Policy":"DEBITALLWC"}`, `[]`} {
		got, gotErr := DetailOf(ledger.Lien{ID: 1, Detail: json.RawMessage(data)})
		var want Detail
		wantErr := json.Unmarshal([]byte(data), &want)
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("DetailOf(%s) = %+v, %v; encoding/json gives %+v, %v", data, got, gotErr, want, wantErr)
		}
	}
}

// FuzzDetailOf wants readDetail to decode any detail as encoding/json
// does, or not at all.
func FuzzDetailOf(f *testing.F) {
	for _, data := range []string{detailOfBenchmark,
		`{"request":{"processors":1,"nodes":2,"gpus":3,"memory_mb":4,"disk_mb":5,"qos":"q","partition":"p","node_type":"n","licenses":{"a":1},"wallclock_limit_seconds":60,"start":"2026-11-22T10:16:11.83239Z"},"policy":"DEBITALLCPU","quote":7,"requested_project":"chem.lab1","quoted":"1.25"}`,
		`{"policy":"debitallwc"}`, `{"quote":-1}`, `{"quoted":1}`, `{"request":null}`, `{}`, ` {} `, `{}{}`,
	} {
		f.Add([]byte(data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jsontest.SameDecoding(t, "detail", data, fastDetail, strictDetail)
	})
}
