package api_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
)

func TestQueryRoundTrip(t *testing.T) {
	for _, q := range []any{
		&api.JournalQuery{Node: "chem", Kinds: []string{"deposit", "charge"}, Since: time.Date(2026, 11, 22, 5, 0, 0, 123, time.UTC), Limit: 3},
		&api.FairShareQuery{Account: "phys", HalfLife: 90 * time.Minute, Compensation: 0.25},
		&api.StatementQuery{Account: "chem", From: time.Unix(0, 0).UTC(), To: time.Unix(1e9, 0).UTC(), Summarize: true},
		&api.LiensQuery{All: true},
		&api.NoQuery{},
	} {
		values := api.EncodeQuery(q)
		got := reflect.New(reflect.TypeOf(q).Elem()).Interface()
		if err := api.DecodeQuery("/v1/x", values, got); err != nil {
			t.Errorf("%T: decode %s: %v", q, values.Encode(), err)
			continue
		}
		if !reflect.DeepEqual(got, q) {
			t.Errorf("%T: %s decodes to %+v, want %+v", q, values.Encode(), got, q)
		}
	}
	if got := api.EncodeQuery(api.BalanceQuery{Node: "chem"}).Encode(); got != "node=chem" {
		t.Errorf("zero fields are sent: %s", got)
	}
}

func TestDecodeQueryRefuses(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		into any
		says string
	}{
		{"node=chem&when=now", &api.BalanceQuery{}, `unknown query parameter "when"; /v1/x takes only node, at`},
		{"x=1", &api.NoQuery{}, "/v1/x takes no parameters"},
		{"", &api.BalanceQuery{}, "needs the query parameter node"},
		{"node=", &api.BalanceQuery{}, "query parameter node is empty"},
		{"node=a&node=b", &api.BalanceQuery{}, "given 2 times"},
		{"node=a&at=yesterday", &api.BalanceQuery{}, "not an RFC 3339 time"},
		{"all=1", &api.LiensQuery{}, `"1" is not true or false`},
		{"limit=ten", &api.JournalQuery{}, "not a whole number"},
		{"account=a&half_life=7", &api.FairShareQuery{}, "not a duration"},
		{"account=a&compensation=NaN", &api.FairShareQuery{}, "not a number"},
	} {
		values, err := url.ParseQuery(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		err = api.DecodeQuery("/v1/x", values, tc.into)
		if e, ok := err.(*api.Error); !ok || e.Code != api.CodeInvalid || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%q: %v; want invalid saying %q", tc.raw, err, tc.says)
		}
	}
}
