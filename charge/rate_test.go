package charge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidateRates(t *testing.T) {
	cases := []struct {
		name  string
		rates []ChargeRate
		want  error
	}{
		{"default", DefaultRateTable().Rates, nil},
		{"any case", []ChargeRate{{Type: "vbr", Name: "processors", Rate: dec("1")}, {Type: "nbm", Name: "qualityofservice", Instance: "Premium", Rate: dec("2")}}, nil},
		{"zero rate", []ChargeRate{{Type: VBR, Name: "GPUs", Rate: dec("0")}}, nil},
		{"finest rate", []ChargeRate{{Type: VBR, Name: "Memory", Rate: dec("0.000000000000000001")}}, nil},
		{"unknown type", []ChargeRate{{Type: "VBX", Name: "Processors", Rate: dec("1")}}, ErrUnknownRateType},
		{"unknown name", []ChargeRate{{Type: VBR, Name: "Cores", Rate: dec("1")}}, ErrUnknownRateName},
		{"property as value", []ChargeRate{{Type: VBR, Name: "QualityOfService", Rate: dec("1")}}, ErrUnknownRateName},
		{"CPUTime scaled by time", []ChargeRate{{Type: VBR, Name: "CPUTime", Rate: dec("1")}}, ErrUnknownRateName},
		{"name-based without instance", []ChargeRate{{Type: NBM, Name: "QualityOfService", Rate: dec("2")}}, ErrBadInstance},
		{"value-based with instance", []ChargeRate{{Type: VBR, Name: "Processors", Instance: "x", Rate: dec("1")}}, ErrBadInstance},
		{"duplicate", []ChargeRate{{Type: VBR, Name: "Processors", Rate: dec("1")}, {Type: "vbr", Name: "PROCESSORS", Rate: dec("2")}}, ErrDuplicateRate},
		{"duplicate instance", []ChargeRate{{Type: NBM, Name: "Partition", Instance: "gpu", Rate: dec("1")}, {Type: NBM, Name: "Partition", Instance: "GPU", Rate: dec("2")}}, ErrDuplicateRate},
		{"negative", []ChargeRate{{Type: VBR, Name: "Processors", Rate: dec("-1")}}, ErrNegativeRate},
		{"huge", []ChargeRate{{Type: VBF, Name: "Nodes", Rate: dec("1e13")}}, ErrAbsurdRate},
		{"too fine", []ChargeRate{{Type: VBR, Name: "Memory", Rate: dec("1e-19")}}, ErrAbsurdRate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := RateTable{Precision: 2, Rates: c.rates}
			if err := table.Validate(); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	for _, p := range []int32{-1, MaxPrecision + 1} {
		if err := (RateTable{Precision: p}).Validate(); !errors.Is(err, ErrBadPrecision) {
			t.Errorf("precision %d: err = %v", p, err)
		}
	}
}

func TestErrorsArePrefixed(t *testing.T) {
	err := RateTable{Precision: 2, Rates: []ChargeRate{{Type: VBR, Name: "Cores", Rate: dec("1")}}}.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "charge: unknown rate name: ") || !strings.Contains(err.Error(), "rates[0]") {
		t.Errorf("error %q should start with its sentinel and name the rate", err)
	}
}

const exampleTable = `{
  "location": "Europe/Paris",
  "rates": [
    {"type": "vbr", "name": "processors", "rate": "1"},
    {"type": "VBR", "name": "Memory", "rate": 0.0001},
    {"type": "NBM", "name": "QualityOfService", "instance": "premium", "rate": "2", "description": "twice the price, first in line"},
    {"type": "NBM", "name": "QualityOfService", "instance": "*", "rate": "1"}
  ],
  "time_of_day": [{"name": "night", "start": "20:00", "end": "06:00", "multiplier": "0.5"}],
  "days_of_week": [{"name": "weekend", "days": ["sat", "SUNDAY"], "multiplier": "0.8"}]
}`

func TestDecodeRateTable(t *testing.T) {
	table, err := DecodeRateTable([]byte(exampleTable))
	if err != nil {
		t.Fatal(err)
	}
	if table.Precision != DefaultPrecision {
		t.Errorf("precision %d, want the default %d", table.Precision, DefaultPrecision)
	}
	if r := table.Rates[0]; r.Type != VBR || r.Name != "Processors" {
		t.Errorf("rate not canonical: %+v", r)
	}
	if !table.Rates[1].Rate.Equal(dec("0.0001")) {
		t.Errorf("a JSON number rate read as %s", table.Rates[1].Rate)
	}
	if days := strings.Join(table.DaysOfWeek[0].Days, ","); days != "Saturday,Sunday" {
		t.Errorf("days = %s", days)
	}
	encoded, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeRateTable(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if reencoded, _ := json.Marshal(again); string(reencoded) != string(encoded) {
		t.Errorf("round trip changed the table:\n%s\n%s", encoded, reencoded)
	}
	if zero, err := DecodeRateTable([]byte(`{"precision": 0, "rates": []}`)); err != nil || zero.Precision != 0 {
		t.Errorf("explicit precision 0: %d, %v", zero.Precision, err)
	}
}

func TestDecodeRateTableErrors(t *testing.T) {
	cases := []struct {
		name, json string
		want       error
	}{
		{"empty", ``, ErrBadRateTable},
		{"null", `null`, ErrBadRateTable},
		{"array", `[]`, ErrBadRateTable},
		{"unknown field", `{"rates": [], "currency": "EUR"}`, ErrBadRateTable},
		{"unknown rate field", `{"rates": [{"type": "VBR", "name": "Processors", "rate": "1", "unit": "s"}]}`, ErrBadRateTable},
		{"float-looking garbage", `{"rates": [{"type": "VBR", "name": "Processors", "rate": "one"}]}`, ErrBadRateTable},
		{"trailing data", `{"rates": []} {}`, nil}, // json.Unmarshal's own syntax error
		{"invalid table", `{"rates": [{"type": "VBR", "name": "Processors", "rate": "-1"}]}`, ErrNegativeRate},
		{"bad window", `{"rates": [], "time_of_day": [{"start": "25:00", "end": "06:00", "multiplier": "1"}]}`, ErrBadWindow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRateTable([]byte(c.json))
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestDefaultRateTable(t *testing.T) {
	table := DefaultRateTable()
	if err := table.Validate(); err != nil {
		t.Fatal(err)
	}
	u := Usage{Resources: Resources{Processors: 16, GPUs: 4, MemoryMB: 1 << 20}, WallclockSeconds: 100, State: Completed}
	a, err := Price(table, DefaultPolicy, Shape{}, u)
	if err != nil || a.Credits.String() != "1600" {
		t.Errorf("16 processors × 100 s = %s, %v; want 1600 (nothing but processors)", a.Credits, err)
	}
}
