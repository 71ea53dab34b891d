package hfs

import (
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
)

// caseFile is the layout of testdata/hfs/hgq-cases.json and of our own
// extension-cases.json.
type caseFile struct {
	Cases []json.RawMessage `json:"cases"`
}

// caseHeader is the part of a case the test reads itself; the case's input
// part goes through DecodeInput as it is.
type caseHeader struct {
	ID       string          `json:"id"`
	Unit     *string         `json:"unit"`
	Expected expectedNumbers `json:"expected"`
}

type expectedNumbers struct {
	Quota     map[string]string `json:"quota"`
	Allocated map[string]string `json:"allocated"`
	Leftover  *string           `json:"leftover"`
}

// tolerance is the reference files' rule: exact when a unit is set, 1e-6
// absolute otherwise.
func tolerance(unit *string) *big.Rat {
	if unit != nil {
		return new(big.Rat)
	}
	return big.NewRat(1, 1_000_000)
}

func TestReferenceCases(t *testing.T) {
	for _, file := range []string{"hgq-cases.json", "extension-cases.json"} {
		for _, raw := range loadCases(t, file) {
			var c caseHeader
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			t.Run(c.ID, func(t *testing.T) {
				// Compare what the CLI prints, so the encoder is checked too.
				out := computeFile(t, raw)
				var printed expectedNumbers
				if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
					t.Fatalf("output is not JSON: %v\n%s", err, out.Bytes())
				}
				tol := tolerance(c.Unit)
				compareNumbers(t, "quota", c.Expected.Quota, printed.Quota, tol)
				compareNumbers(t, "allocated", c.Expected.Allocated, printed.Allocated, tol)
				if c.Expected.Leftover != nil {
					compareNumbers(t, "leftover", map[string]string{"": *c.Expected.Leftover}, map[string]string{"": *printed.Leftover}, tol)
				}
				if t.Failed() {
					t.Logf("output:\n%s", out.Bytes())
				}
			})
		}
	}
}

func loadCases(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "hfs", name))
	if err != nil {
		t.Fatal(err)
	}
	var f caseFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	return f.Cases
}

func compareNumbers(t *testing.T, what string, want, got map[string]string, tol *big.Rat) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s[%q]: missing, want %s", what, name, w)
			continue
		}
		if !within(t, g, w, tol) {
			t.Errorf("%s[%q] = %s, want %s", what, name, g, w)
		}
	}
}

func within(t *testing.T, got, want string, tol *big.Rat) bool {
	t.Helper()
	g, ok1 := new(big.Rat).SetString(got)
	w, ok2 := new(big.Rat).SetString(want)
	if !ok1 || !ok2 {
		t.Fatalf("not numbers: %q, %q", got, want)
	}
	diff := g.Sub(g, w)
	return diff.Abs(diff).Cmp(tol) <= 0
}

// computeFile runs an input file through DecodeInput, Compute and
// EncodeJSON, as `ingot hfs compute` does.
func computeFile(t *testing.T, raw []byte) *bytes.Buffer {
	t.Helper()
	in, err := DecodeInput(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compute(in.Total, in.Unit, in.Tree)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.EncodeJSON(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}
