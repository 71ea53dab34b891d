package charge

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeRateTable reads a rate table from JSON, as json.Marshal writes it:
//
//	{"precision": 2, "location": "Europe/Paris",
//	 "rates": [{"type": "VBR", "name": "Processors", "rate": "1"},
//	           {"type": "NBM", "name": "QualityOfService", "instance": "premium", "rate": "2"}],
//	 "time_of_day": [{"name": "night", "start": "20:00", "end": "06:00", "multiplier": "0.5"}],
//	 "days_of_week": [{"name": "weekend", "days": ["Saturday", "Sunday"], "multiplier": "0.8"}]}
//
// Unknown fields are refused; a missing precision is DefaultPrecision;
// rates and multipliers may be JSON strings or numbers (they are read as
// decimals, never as floats). The table is returned in canonical spelling
// (Gold's names, full day names) and validated.
func DecodeRateTable(data []byte) (RateTable, error) {
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' {
		return RateTable{}, fmt.Errorf("%w: not a JSON object", ErrBadRateTable)
	}
	var t RateTable
	err := json.Unmarshal(data, &t)
	return t, err
}

// UnmarshalJSON decodes and validates a rate table, so that a table nested
// in another document (a guaranteed quote) is checked too. See DecodeRateTable.
func (t *RateTable) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil // the encoding/json convention: null leaves the value alone
	}
	type plain RateTable // plain has no UnmarshalJSON, so decoding it does not recurse
	p := plain{Precision: DefaultPrecision}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRateTable, err)
	}
	table := RateTable(p).canonical()
	if err := table.Validate(); err != nil {
		return err
	}
	*t = table
	return nil
}
