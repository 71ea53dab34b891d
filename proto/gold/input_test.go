package gold_test

import (
	"html"
	"strings"
	"testing"
)

// TestAmountGrammar: Gold's amounts are read in the bank's one grammar,
// as the JSON API and the command line read them: "100" and "100.5" are
// amounts, an exponent, a sign or a separator is not (314, nothing
// written), in a deposit, its credit limit, a withdrawal, a transfer and
// a refund.
func TestAmountGrammar(t *testing.T) {
	s := newSite(t)
	for _, c := range []struct{ name, body, says string }{
		{"exponent", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">1e3</Option>`), `Amount: ledger: invalid input: amount "1e3" is not a plain decimal number`},
		{"capital exponent", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">1E3</Option>`), `"1E3"`},
		{"negative exponent", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">1e-2</Option>`), `"1e-2"`},
		{"plus", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">+1</Option>`), `"+1"`},
		{"fraction with an exponent", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">0.1e1</Option>`), `"0.1e1"`},
		{"separator", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">1,000</Option>`), `"1,000"`},
		{"credit limit", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">1</Option><Option name="CreditLimit">1e3</Option>`), `CreditLimit: ledger: invalid input: amount "1e3"`},
		{"withdrawal", request("Withdraw", "Account", `<Option name="Id">chem</Option><Option name="Amount">-5</Option>`), `"-5"`},
		{"transfer", request("Transfer", "Account", `<Option name="FromId">chem</Option><Option name="ToId">bio</Option><Option name="Amount">1e1</Option>`), `"1e1"`},
		{"refund", request("Refund", "Job", `<Option name="JobId">4242</Option><Option name="MachineName">hpc1</Option><Option name="Amount">-1</Option>`), `"-1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.entries()
			code, msg, _ := s.send("staff", c.body, false)
			if msg = html.UnescapeString(msg); code != "314" || !strings.Contains(msg, c.says) {
				t.Errorf("reply %s %q; want 314 saying %q", code, msg, c.says)
			}
			if after := s.entries(); after != before {
				t.Errorf("%d journal entries written", after-before)
			}
		})
	}
	for _, c := range []struct{ amount, count string }{{"100", "100"}, {"100.5", "100.5"}, {"0100.50", "100.5"}} {
		body := request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">`+c.amount+`</Option>`)
		if code, msg, count := s.send("staff", body, false); code != "000" || count != c.count {
			t.Errorf("deposit of %s: %s %q, count %s; want 000, count %s", c.amount, code, msg, count, c.count)
		}
	}
}

// TestFormatCharacters: a description holding a character that changes
// how text shows without being seen (a bidirectional override, a
// zero-width space, a byte order mark), raw or as an XML character
// reference, is refused (314) and nothing is written, as over the JSON
// API and on the command line.
func TestFormatCharacters(t *testing.T) {
	s := newSite(t)
	for _, c := range []struct{ name, description, says string }{
		{"right-to-left override", "grant \u202e1202 tnarg", "format character U+202E"},
		{"as a character reference", "grant &#x202E;1202", "format character U+202E"},
		{"zero width space", "gr\u200bant", "format character U+200B"},
		{"byte order mark", "&#xFEFF;grant", "format character U+FEFF"},
		{"isolate", "\u2066x\u2069", "format character U+2066"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.entries()
			body := request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">1</Option><Option name="Description">`+c.description+`</Option>`)
			code, msg, _ := s.send("staff", body, false)
			if msg = html.UnescapeString(msg); code != "314" || !strings.Contains(msg, c.says) {
				t.Errorf("reply %s %q; want 314 saying %q", code, msg, c.says)
			}
			if after := s.entries(); after != before {
				t.Errorf("%d journal entries written", after-before)
			}
		})
	}
}
