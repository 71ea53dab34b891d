package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

type strictInner struct {
	Name   string                     `json:"name"`
	Tags   map[string]string          `json:"tags,omitempty"`
	Price  decimal.Decimal            `json:"price"`
	Limit  *decimal.Decimal           `json:"limit,omitempty"`
	Prices map[string]decimal.Decimal `json:"prices,omitempty"`
	Steps  []decimal.Decimal          `json:"steps,omitempty"`
}

type strictOuter struct {
	strictInner
	Account string        `json:"account"`
	Items   []strictInner `json:"items"`
	Other   *strictInner  `json:"other,omitempty"`
	Plain   int
}

// TestCheckBody: each way a body may say something other than what a
// reader of it sees is refused with its code; sound bodies pass.
func TestCheckBody(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		code       Code // "" for a body that passes
	}{
		{"sound", `{"account":"chem","name":"x","items":[{"name":"a","tags":{"k":"v"},"price":"1.5"}],"other":{"name":"b"},"Plain":3}`, ""},
		{"duplicate key", `{"account":"chem","account":"bio"}`, CodeDuplicateKey},
		{"duplicate key in a list", `{"items":[{"name":"a","name":"b"}]}`, CodeDuplicateKey},
		{"duplicate key in a map", `{"items":[{"tags":{"k":"1","k":"2"}}]}`, CodeDuplicateKey},
		{"duplicate promoted key", `{"name":"a","name":"b"}`, CodeDuplicateKey},
		{"key in another case", `{"Account":"chem"}`, CodeKeySpelling},
		{"nested key in another case", `{"other":{"NAME":"b"}}`, CodeKeySpelling},
		{"a field without a tag, in another case", `{"plain":3}`, CodeKeySpelling},
		{"invalid UTF-8", "{\"account\":\"ch\xffem\"}", CodeInvalidUTF8},
		{"escape", `{"account":"chem\u001b[2J"}`, CodeControlCharacter},
		{"newline", `{"items":[{"name":"a\nb"}]}`, CodeControlCharacter},
		{"C1 control", `{"account":"a\u0085b"}`, CodeControlCharacter},
		{"control in a key", `{"tags\u0000":1}`, CodeControlCharacter},
		{"malformed: left to the decoder", `{"account":`, ""},
		{"unknown key: left to the decoder", `{"acount":"chem"}`, ""},
		// Strings that would not print as themselves (ledger.CheckText).
		{"right-to-left override", "{\"account\":\"a\u202eb\"}", CodeControlCharacter},
		{"right-to-left override, escaped", `{"account":"a\u202Eb"}`, CodeControlCharacter},
		{"zero width space in a key", `{"tags":{"k\u200b":"v"}}`, CodeControlCharacter},
		{"byte order mark", `{"items":[{"name":"\ufeffa"}]}`, CodeControlCharacter},
		{"line separator", `{"account":"a\u2028b"}`, CodeControlCharacter},
		{"text in any script", `{"account":"Förderung 研究 مختبر ☃"}`, ""},
		// Escapes of half a surrogate pair, which encoding/json reads as U+FFFD.
		{"lone high surrogate", `{"account":"\ud800"}`, CodeInvalidUTF8},
		{"lone low surrogate", `{"account":"a\uDC00"}`, CodeInvalidUTF8},
		{"high surrogate, then not a low one", `{"account":"\ud800\u0041"}`, CodeInvalidUTF8},
		{"two high surrogates", `{"account":"\ud83d\ud83d"}`, CodeInvalidUTF8},
		{"lone surrogate in a key", `{"\udfff":"x"}`, CodeInvalidUTF8},
		{"surrogate pair", `{"account":"\ud83d\ude00"}`, ""},
		{"escaped backslash, then ud800", `{"account":"\\ud800"}`, ""},
		{"escaped backslash, then a pair", `{"account":"\\\ud83d\ude00"}`, ""},
		{"U+FFFD as it is", `{"account":"\ufffd�"}`, ""},
		// Decimals: a JSON string in the bank's grammar, or null.
		{"decimal", `{"items":[{"price":"12.50","limit":"0","prices":{"a":"1"},"steps":["1","2.5"]}]}`, ""},
		{"null decimal", `{"items":[{"price":null,"limit":null}]}`, ""},
		{"exponent", `{"items":[{"price":"1e3"}]}`, CodeInvalid},
		{"capital exponent", `{"items":[{"price":"1E3"}]}`, CodeInvalid},
		{"plus", `{"items":[{"price":"+1"}]}`, CodeInvalid},
		{"minus", `{"items":[{"limit":"-1"}]}`, CodeInvalid},
		{"no digit before the point", `{"items":[{"price":".5"}]}`, CodeInvalid},
		{"separator", `{"items":[{"price":"1,000"}]}`, CodeInvalid},
		{"bare number", `{"items":[{"price":1e3}]}`, CodeInvalid},
		{"bare whole number", `{"items":[{"price":100}]}`, CodeInvalid},
		{"bare number in a map of decimals", `{"items":[{"prices":{"a":1}}]}`, CodeInvalid},
		{"exponent in a list of decimals", `{"items":[{"steps":["1","1e1"]}]}`, CodeInvalid},
		{"object for a decimal", `{"items":[{"price":{}}]}`, CodeInvalid},
		{"boolean for a decimal", `{"items":[{"price":true}]}`, CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBody([]byte(tc.body), &strictOuter{})
			var e *Error
			switch {
			case tc.code == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.code != "" && (!errors.As(err, &e) || e.Code != tc.code):
				t.Errorf("got %v, want code %s", err, tc.code)
			}
		})
	}
}

// FuzzCheckBody: any body is read without a panic, and a refusal is an
// Error with one of the body's codes.
func FuzzCheckBody(f *testing.F) {
	for _, s := range []string{`{"account":"chem","account":"x"}`, `{"Account":1}`, `{"items":[{"tags":{"a":"b"}}]}`, "\xff", `[1,{"a":[]}]`, `"\u0007"`,
		`{"items":[{"price":"1e3","limit":1}]}`, `{"account":"\ud800\udc00\\ud800"}`, "{\"name\":\"\u202e\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := CheckBody(body, &strictOuter{})
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%q: %v is not an Error", body, err)
		}
		switch e.Code {
		case CodeInvalidUTF8, CodeDuplicateKey, CodeKeySpelling, CodeControlCharacter, CodeInvalid:
		default:
			t.Fatalf("%q: code %s", body, e.Code)
		}
	})
}

// FuzzAmount is the shared target of the bank's one grammar of amounts: it
// holds the interfaces to it. An amount s, at a bank's precision p:
//
//   - the command line reads it with ledger.ParseAmount(s, p);
//   - the JSON API reads it, as a JSON string in a deposit, through
//     CheckBody, the decoder and the bank's ledger.CheckAmount;
//   - Gold's listener reads it with ledger.ParseAmount at Gold's most
//     places (8), then asks the JSON API in process, whose body is the
//     decimal as encoding/json writes it.
//
// Each takes s exactly when the others do, as the same number; nothing
// with a sign, an exponent or a separator is taken; what is taken prints
// back to a string that reads as the same number. s as a bare JSON value
// is taken only as null or a string the grammar reads: never as a number.
func FuzzAmount(f *testing.F) {
	for _, s := range []string{"100", "12.50", "0", "0.001", "1e3", "1E3", "1e-2", "+1", "-1", "0.1e1", ".5", "1.", "1,000", "0100",
		"999999999999999.99", "1000000000000000.01", `"1"`, "null", "\u202e1", `\u0031`, "1\x00"} {
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, s string, places uint8) {
		p := int32(places % 9) // a bank's precision is 0 to 8 places
		cli, cliErr := ledger.ParseAmount(s, p)

		quoted, _ := json.Marshal(s) // invalid UTF-8 becomes U+FFFD, which the grammar refuses as it refuses the bytes
		viaAPI, apiErr := depositAmount(t, []byte(`{"account":"chem","amount":`+string(quoted)+`}`), p)

		gold, goldErr := ledger.ParseAmount(s, 8)
		if goldErr == nil {
			sent, err := json.Marshal(DepositRequest{Account: "chem", Amount: gold})
			if err != nil {
				t.Fatal(err)
			}
			gold, goldErr = depositAmount(t, sent, p)
		}

		if (cliErr == nil) != (apiErr == nil) || (cliErr == nil) != (goldErr == nil) {
			t.Fatalf("%q at %d places: the command line says %v, the JSON API %v, Gold %v", s, p, cliErr, apiErr, goldErr)
		}
		if cliErr == nil {
			if strings.ContainsAny(s, "eE+-, ") {
				t.Fatalf("%q with a sign, an exponent or a separator is taken", s)
			}
			if !viaAPI.Equal(cli) || !gold.Equal(cli) {
				t.Fatalf("%q reads as %s on the command line, %s over the JSON API, %s through Gold", s, cli, viaAPI, gold)
			}
			if back, err := ledger.ParseAmount(cli.String(), p); err != nil || !back.Equal(cli) {
				t.Fatalf("%q prints as %s, which reads back as %s, %v", s, cli, back, err)
			}
		}

		// s as the JSON value itself: a number is never an amount.
		body := []byte(`{"account":"chem","amount":` + s + `}`)
		if !json.Valid(body) {
			return
		}
		var raw struct{ Amount any }
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		err := CheckBody(body, &DepositRequest{})
		switch v := raw.Amount.(type) {
		case json.Number:
			if e, ok := errors.AsType[*Error](err); !ok || e.Code != CodeInvalid {
				t.Fatalf("the JSON number %s as an amount: %v; want %s", s, err, CodeInvalid)
			}
		case string:
			if _, perr := ledger.ParseDecimal("amount", v); (perr == nil) != (err == nil) {
				t.Fatalf("the JSON string %s as an amount: CheckBody says %v, the grammar %v", s, err, perr)
			}
		}
	})
}

// depositAmount is the amount of a deposit's body as the JSON API reads
// it: strictly (CheckBody), decoded, and checked by the bank at precision p.
func depositAmount(t *testing.T, body []byte, p int32) (decimal.Decimal, error) {
	var spec DepositRequest
	if err := CheckBody(body, &spec); err != nil {
		if _, ok := errors.AsType[*Error](err); !ok {
			t.Fatalf("%s: CheckBody's %v is not an Error", body, err)
		}
		return decimal.Decimal{}, err
	}
	if err := json.Unmarshal(body, &spec); err != nil {
		return decimal.Decimal{}, err
	}
	return spec.Amount, ledger.CheckAmount(spec.Amount, p)
}
