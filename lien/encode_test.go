package lien

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ingot-hpc/ingot/internal/jsonbuf/jsontest"
)

// The plain types have the fields and tags of this package's types but
// none of their methods, so encoding/json encodes them by reflection: the
// reference the hand-written encoders must match. (What they hold of
// packages ledger and charge uses the hand-written encoders, which are
// checked there.)
type (
	plainLienResult   LienResult
	plainChargeResult ChargeResult
	plainDetail       Detail
	plainChargeDetail chargeDetail
	plainPlaceSpec    PlaceSpec
	plainChargeSpec   ChargeSpec
)

// TestEncodersMatchEncodingJSON fills every field of the answers, details
// and requests with random values (tricky strings, decimals, times,
// unknown policies, empty and nil slices, unset optional fields) and wants
// the hand-written encoders to give encoding/json's bytes, or to refuse
// what it refuses.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		var (
			lr LienResult
			cr ChargeResult
			d  Detail
			cd chargeDetail
			ps PlaceSpec
			cs ChargeSpec
		)
		for _, v := range []any{&lr, &cr, &d, &cd, &ps, &cs} {
			jsontest.Fill(r, reflect.ValueOf(v).Elem())
		}
		jsontest.Appends(t, fmt.Sprintf("lien result %d", i), lr.AppendJSON, plainLienResult(lr))
		jsontest.Appends(t, fmt.Sprintf("charge result %d", i), cr.AppendJSON, plainChargeResult(cr))
		jsontest.Appends(t, fmt.Sprintf("lien detail %d", i), d.AppendJSON, plainDetail(d))
		jsontest.Appends(t, fmt.Sprintf("charge detail %d", i), cd.AppendJSON, plainChargeDetail(cd))
		jsontest.Appends(t, fmt.Sprintf("place spec %d", i), ps.AppendJSON, plainPlaceSpec(ps))
		jsontest.Appends(t, fmt.Sprintf("charge spec %d", i), cs.AppendJSON, plainChargeSpec(cs))
	}
}
