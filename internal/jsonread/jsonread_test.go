package jsonread

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRawMessage wants RawMessage to accept only what encoding/json
// accepts into a json.RawMessage, with the same bytes.
func FuzzRawMessage(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,"x\u00e9\n",true,false,null,{}],"b":{"c":[]}}`, ` "x" `, `0`, `-0.0`, `01`, `1.`,
		`1e`, `[1,]`, `{"a":1,}`, `"\x"`, `"\u12"`, "\"\x01\"", "\"\xff\"", `nul`, `null`, `[[[[[]]]]]`, `{"a" 1}`, `[1 2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want json.RawMessage
		r := New(data)
		if r.RawMessage(&got); !r.End() {
			return
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("RawMessage accepted %q, encoding/json refuses it: %v", data, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: RawMessage %q, encoding/json %q", data, got, want)
		}
	})
}
