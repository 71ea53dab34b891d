package charge

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// request: 8 processors, 1 node, 64000 MB, for a 7200 s limit.
var request = Request{Resources: Resources{Processors: 8, Nodes: 1, MemoryMB: 64000}, WallclockLimitSeconds: 7200}

// TestQuote: a quote is the price of the request run to its limit with
// its CPUs busy, under any policy (a SUCCESSFUL policy charges such a job).
func TestQuote(t *testing.T) {
	cases := []struct {
		policy Policy
		want   string
	}{
		{DebitAllWC, "57600"},              // 8 × 7200
		{DebitSuccessfulWC, "57600"},       // 8 × 7200
		{DebitSuccessfulCPU, "57600"},      // ConsumptionRate 1
		{DebitAllPE, "115200"},             // PE 16 × 7200
		{DebitSuccessfulBlocked, "230400"}, // 32 × 7200
		{DebitRequestedWC, "57600"},        // 8 × 7200
	}
	for _, c := range cases {
		t.Run(c.policy.String(), func(t *testing.T) {
			a, err := Quote(DefaultRateTable(), c.policy, node, request)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Credits.Equal(dec(c.want)) || a.Explanation.Subject != "quote" || a.Explanation.State != 0 {
				t.Errorf("got %s\n%s", a.Credits, a)
			}
		})
	}
	errorCases := []struct {
		name string
		req  Request
		want error
	}{
		{"no limit", Request{Resources: Resources{Processors: 1}}, ErrNoWallclockLimit},
		{"negative limit", Request{Resources: Resources{Processors: 1}, WallclockLimitSeconds: -1}, ErrNegative},
		{"absurd limit", Request{Resources: Resources{Processors: 1}, WallclockLimitSeconds: MaxSeconds + 1}, ErrAbsurd},
		{"absurd processors", Request{Resources: Resources{Processors: 1 << 62}, WallclockLimitSeconds: 60}, ErrAbsurd},
		{"windows without start", Request{Resources: Resources{Processors: 1}, WallclockLimitSeconds: 60}, ErrNoStartTime},
	}
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			table := DefaultRateTable()
			if c.want == ErrNoStartTime {
				table = nightsAndWeekends("")
			}
			if _, err := Quote(table, DebitAllWC, node, c.req); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestGuaranteedQuote(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	expires := now.Add(24 * time.Hour)
	table := DefaultRateTable()
	q, err := Guarantee(table, DebitSuccessfulWC, node, request, now, expires, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Amount.Credits.Equal(dec("57600")) {
		t.Fatalf("quoted %s, want 57600", q.Amount.Credits)
	}

	t.Run("frozen table", func(t *testing.T) {
		// The bank doubles the processor rate and adds a GPU rate.
		table.Rates[0].Rate = dec("2")
		table.Rates = append(table.Rates, ChargeRate{Type: VBR, Name: "GPUs", Rate: dec("100")})
		u := Usage{Resources: Resources{Processors: 8, GPUs: 1}, WallclockSeconds: 3600, State: Completed}
		a, err := q.Price(u)
		if err != nil || !a.Credits.Equal(dec("28800")) {
			t.Errorf("under the quote: %s, %v; want 28800 (old rate, no GPU rate)", a.Credits, err)
		}
		if now, _ := Price(table, DebitSuccessfulWC, node, u); !now.Credits.Equal(dec("417600")) {
			t.Errorf("under today's table: %s, want 417600", now.Credits)
		}
	})

	t.Run("uses", func(t *testing.T) {
		q := q
		for i := range 2 {
			if err := q.Use(now.Add(time.Hour)); err != nil {
				t.Fatalf("use %d: %v", i+1, err)
			}
		}
		if err := q.Use(now.Add(time.Hour)); !errors.Is(err, ErrQuoteUsedUp) {
			t.Errorf("third use: %v", err)
		}
	})

	t.Run("expiry", func(t *testing.T) {
		if err := q.Check(expires.Add(-time.Second)); err != nil {
			t.Errorf("a second before expiry: %v", err)
		}
		if err := q.Check(expires); !errors.Is(err, ErrQuoteExpired) {
			t.Errorf("at expiry: %v", err)
		}
	})

	t.Run("bad", func(t *testing.T) {
		if _, err := Guarantee(table, DebitAllWC, node, request, now, expires, 0); !errors.Is(err, ErrBadQuote) {
			t.Errorf("no uses: %v", err)
		}
		if _, err := Guarantee(table, DebitAllWC, node, request, now, now, 1); !errors.Is(err, ErrBadQuote) {
			t.Errorf("expires now: %v", err)
		}
		if _, err := Guarantee(table, DebitAllWC, node, Request{}, now, expires, 1); !errors.Is(err, ErrNoWallclockLimit) {
			t.Errorf("no limit: %v", err)
		}
	})

	t.Run("JSON", func(t *testing.T) {
		encoded, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		var back GuaranteedQuote
		if err := json.Unmarshal(encoded, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); string(again) != string(encoded) {
			t.Errorf("round trip changed the quote:\n%s\n%s", encoded, again)
		}
	})
}
