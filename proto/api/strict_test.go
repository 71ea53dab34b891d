package api

import (
	"errors"
	"testing"

	"github.com/shopspring/decimal"
)

type strictInner struct {
	Name  string            `json:"name"`
	Tags  map[string]string `json:"tags,omitempty"`
	Price decimal.Decimal   `json:"price"`
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
	for _, s := range []string{`{"account":"chem","account":"x"}`, `{"Account":1}`, `{"items":[{"tags":{"a":"b"}}]}`, "\xff", `[1,{"a":[]}]`, `"\u0007"`} {
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
		case CodeInvalidUTF8, CodeDuplicateKey, CodeKeySpelling, CodeControlCharacter:
		default:
			t.Fatalf("%q: code %s", body, e.Code)
		}
	})
}
