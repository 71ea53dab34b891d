package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// requestID makes a request id of a test case's name, which may hold
// spaces and quotes that a request id may not.
func requestID(name string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, name)
}

// TestAmountGrammar: every decimal a request body carries (the amounts of
// deposits, withdrawals, transfers, refunds; credit limits; the values of
// an HFS policy) is read in the bank's one grammar, as the command line
// and the Gold listener read it: a JSON string of digits, optionally a
// point and more digits. An exponent, a sign, a separator or a bare JSON
// number is refused (invalid) and writes nothing, on every endpoint.
func TestAmountGrammar(t *testing.T) {
	s := newSite(t)
	refuse := func(name, target, body, msg string) refusal {
		return refusal{name, exchange{key: s.keys["root"], method: http.MethodPost, target: target, body: []byte(body), requestID: requestID("grammar-" + name)},
			400, api.CodeInvalid, msg}
	}
	deposit := func(amount string) string { return `{"account":"chem","amount":` + amount + `}` }
	var refusals []refusal
	for _, a := range []string{`"1e3"`, `"1E3"`, `"1e-2"`, `"+1"`, `"0.1e1"`, `"-1"`, `" 1"`, `"1,000"`, `"1_000"`, `"0x10"`, `"1."`, `".5"`, `"١"`, `""`} {
		refusals = append(refusals, refuse("deposit "+a, api.PathDeposits, deposit(a), "is not a plain decimal number"))
	}
	for _, a := range []string{`1e3`, `100`, `12.5`, `true`, `{}`, `["1"]`} {
		refusals = append(refusals, refuse("deposit of the JSON "+a, api.PathDeposits, deposit(a), "write a decimal as a JSON string"))
	}
	refusals = append(refusals,
		refuse("credit limit", api.PathDeposits, `{"account":"chem","amount":"1","credit_limit":"1e3"}`, `credit_limit "1e3"`),
		refuse("credit limit, a JSON number", api.PathDeposits, `{"account":"chem","amount":"1","credit_limit":5}`, "credit_limit is the JSON number 5"),
		refuse("withdrawal", api.PathWithdrawals, `{"account":"chem","amount":"1e1"}`, `amount "1e1"`),
		refuse("transfer", api.PathTransfers, `{"from":"chem","to":"bio","amount":"1E1"}`, `amount "1E1"`),
		refuse("refund", api.PathRefunds, `{"charge":1,"amount":"1e0"}`, `amount "1e0"`),
		refuse("job refund", api.PathJobRefunds, `{"machine":"hpc1","job_id":"1","amount":"+1"}`, `amount "+1"`),
		refuse("allocation's credit limit", api.PathAllocationModify, `{"allocation":1,"change":{"credit_limit":"1e2"}}`, `credit_limit "1e2"`),
		refuse("static quota", api.PathNodes, `{"name":"chem.lab2","policy":{"quota_kind":"static","quota":"1e2"}}`, `quota "1e2"`),
		refuse("dynamic quota as a JSON number", api.PathNodes, `{"name":"chem.lab2","policy":{"quota_kind":"dynamic","quota":0.5}}`, "quota is the JSON number 0.5"),
		refuse("limit", api.PathNodeModify, `{"name":"chem.lab1","change":{"policy":{"limit":"5e1"}}}`, `limit "5e1"`),
		refuse("non_shared", api.PathNodeModify, `{"name":"chem.lab1","change":{"policy":{"non_shared":"1e0"}}}`, `non_shared "1e0"`),
		refuse("ownership", api.PathNodeModify, `{"name":"chem.lab1","change":{"policy":{"ownership":"+2"}}}`, `ownership "+2"`),
		refuse("group_non_shared", api.PathNodeModify, `{"name":"chem.lab1","change":{"policy":{"group_non_shared":"2E0"}}}`, `group_non_shared "2E0"`),
	)
	s.wantRefusals(t, refusals)

	// What the grammar takes is taken, as the command line takes it.
	var r ledger.Receipt
	for i, a := range []string{"12.50", "0100", "7"} {
		s.ok(exchange{key: s.keys["root"], method: http.MethodPost, target: api.PathDeposits, body: []byte(deposit(`"` + a + `"`)), requestID: fmt.Sprint("grammar-ok-", i)}, &r)
	}
	wantAmount(t, "chem's amount", s.balance("chem").Amount, "1119.5")
}

// TestLoneSurrogate: a JSON escape of half a UTF-16 surrogate pair
// (\ud800) is not a character; encoding/json would keep U+FFFD in its
// place, so the bank would hold other text than the signer sent. It is
// refused (invalid_utf8) wherever it stands; a whole pair, U+FFFD itself
// and an escaped backslash before "ud800" are text and taken.
func TestLoneSurrogate(t *testing.T) {
	s := newSite(t)
	deposit := func(name, description string) exchange {
		return exchange{key: s.keys["root"], method: http.MethodPost, target: api.PathDeposits, requestID: requestID("surrogate-" + name),
			body: []byte(`{"account":"chem","amount":"1","description":"` + description + `"}`)}
	}
	var refusals []refusal
	for name, d := range map[string]string{"high": `\ud800`, "low": `\udc00`, "high then a letter": `\ud800\u0041`, "after text": `grant \uDBFF`,
		"two highs": `\ud800\ud800`, "low then high": `\udc00\ud800`, "high at the end": `x\ud83d`} {
		refusals = append(refusals, refusal{name, deposit(name, d), 400, api.CodeInvalidUTF8, "surrogate"})
	}
	refusals = append(refusals, refusal{"in a key", exchange{key: s.keys["root"], method: http.MethodPost, target: api.PathDeposits, requestID: "surrogate-key",
		body: []byte(`{"account":"chem","amount":"1","\ud800":"x"}`)}, 400, api.CodeInvalidUTF8, "surrogate"})
	s.wantRefusals(t, refusals)

	for name, c := range map[string]struct{ sent, kept string }{
		"a pair":               {`\ud83d\ude00 grant`, "😀 grant"},
		"U+FFFD":               {`\ufffd`, "\ufffd"},
		"an escaped backslash": {`\\ud800`, `\ud800`},
	} {
		var r ledger.Receipt
		s.ok(deposit(name, c.sent), &r)
		if got := r.Allocations[0].Description; got != c.kept {
			t.Errorf("%s: description kept as %q, want %q", name, got, c.kept)
		}
	}
}

// TestFormatCharacters: a character that changes how text shows without
// being seen (Unicode's format characters, Cf: the bidirectional
// overrides and isolates, the zero-width ones, the byte order mark) or
// that breaks a line (U+2028, U+2029) is refused in a description or a
// name (control_character) as a control character is, raw or escaped,
// and nothing is written.
func TestFormatCharacters(t *testing.T) {
	s := newSite(t)
	var refusals []refusal
	for _, c := range []struct{ name, text, says string }{
		{"right-to-left override", "grant \u202e1202 tnarg", "format character U+202E"},
		{"right-to-left override, escaped", `grant \u202E`, "format character U+202E"},
		{"left-to-right embedding", "\u202a", "U+202A"},
		{"first strong isolate", "a\u2068b", "U+2068"},
		{"pop directional isolate", "\u2069", "U+2069"},
		{"zero width space", "gr\u200bant", "format character U+200B"},
		{"right-to-left mark", "\u200f", "U+200F"},
		{"byte order mark", "\ufeffgrant", "format character U+FEFF"},
		{"line separator", "a\u2028b", "U+2028"},
	} {
		refusals = append(refusals, refusal{c.name, exchange{key: s.keys["root"], method: http.MethodPost, target: api.PathDeposits, requestID: requestID("format-" + c.name),
			body: []byte(`{"account":"chem","amount":"1","description":"` + c.text + `"}`)}, 400, api.CodeControlCharacter, c.says})
	}
	refusals = append(refusals,
		refusal{"in a node's description", exchange{key: s.keys["root"], method: http.MethodPost, target: api.PathNodes, requestID: "format-node",
			body: []byte(`{"name":"chem.lab2","description":"lab \u2066two\u2069","policy":{"quota_kind":"dynamic","quota":"0"}}`)}, 400, api.CodeControlCharacter, "U+2066"},
		refusal{"in a client's name", exchange{key: s.keys["root"], method: http.MethodPost, target: api.PathClients, requestID: "format-client",
			body: []byte(`{"name":"sched\u200d","role":"admin"}`)}, 400, api.CodeControlCharacter, "U+200D"},
	)
	s.wantRefusals(t, refusals)
}
