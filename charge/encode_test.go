package charge_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/jsonbuf/jsontest"
)

// The plain types have the fields and tags of charge's types but none of
// their methods, so encoding/json encodes them by reflection: the
// reference the hand-written encoders must match. (A plain amount's
// explanation uses its hand-written encoder, which is checked on its own.)
type (
	plainAmount      charge.Amount
	plainExplanation charge.Explanation
	plainUsage       charge.Usage
	plainRequest     charge.Request
)

// TestEncodersMatchEncodingJSON fills every field of amounts, usages and
// requests (and policies) with random values (tricky strings, decimals, times, unknown
// policies and exit states, empty and nil slices and maps, unset optional
// fields) and wants the hand-written encoders to give encoding/json's
// bytes, or to refuse what it refuses.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		var a charge.Amount
		jsontest.Fill(r, reflect.ValueOf(&a).Elem())
		jsontest.Appends(t, fmt.Sprintf("amount %d", i), a.AppendJSON, plainAmount(a))
		jsontest.Appends(t, fmt.Sprintf("explanation %d", i), a.Explanation.AppendJSON, plainExplanation(a.Explanation))
		jsontest.Appends(t, fmt.Sprintf("policy %d", i), a.Explanation.Policy.AppendJSON, a.Explanation.Policy) // by MarshalText
		var u charge.Usage
		jsontest.Fill(r, reflect.ValueOf(&u).Elem())
		jsontest.Appends(t, fmt.Sprintf("usage %d", i), u.AppendJSON, plainUsage(u))
		var q charge.Request
		jsontest.Fill(r, reflect.ValueOf(&q).Elem())
		jsontest.Appends(t, fmt.Sprintf("request %d", i), q.AppendJSON, plainRequest(q))
	}
}
