package main

import (
	"strings"
	"testing"
)

// TestAmountGrammarCLI: the command line reads amounts, credit limits and
// the values of an HFS policy in the bank's one grammar, as the JSON API
// and the Gold listener read them: an exponent, a sign or a separator is
// a usage error (exit 2) and nothing is written.
func TestAmountGrammarCLI(t *testing.T) {
	b := newHFSSite(t)
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"exponent", []string{"deposit", "chem", "1e3"}, `amount "1e3" is not a plain decimal number`},
		{"capital exponent", []string{"deposit", "chem", "1E3"}, `amount "1E3" is not a plain decimal number`},
		{"negative exponent", []string{"deposit", "chem", "1e-2"}, `amount "1e-2" is not a plain decimal number`},
		{"plus", []string{"deposit", "chem", "+1"}, `amount "+1" is not a plain decimal number`},
		{"fraction with an exponent", []string{"deposit", "chem", "0.1e1"}, `amount "0.1e1" is not a plain decimal number`},
		{"credit limit", []string{"deposit", "chem", "1", "--credit-limit", "1e3"}, `--credit-limit: ledger: invalid input: amount "1e3" is not a plain decimal number`},
		{"withdrawal", []string{"withdraw", "chem", "1,000"}, `amount "1,000" is not a plain decimal number`},
		{"transfer", []string{"transfer", "phys", "chem", "1e1"}, `amount "1e1" is not a plain decimal number`},
		{"refund", []string{"refund", "1", "1e1"}, `amount "1e1" is not a plain decimal number`},
		{"static quota", []string{"project", "policy", "chem.a", "--quota", "static:1e2"}, `--quota "1e2" is not a plain decimal number`},
		{"negative static quota", []string{"project", "policy", "chem.a", "--quota", "static:-5"}, `--quota "-5" is not a plain decimal number`},
		{"limit", []string{"project", "policy", "chem.a", "--limit", "5e1"}, `--limit "5e1" is not a plain decimal number`},
		{"non_shared", []string{"project", "policy", "chem.a", "--non-shared", "+1"}, `--non-shared "+1" is not a plain decimal number`},
	} {
		t.Run(c.name, func(t *testing.T) { b.refused(t, exitUsage, c.says, c.args...) })
	}
}

// TestFormatCharactersCLI: a --description holding a character that
// changes how text shows without being seen (a bidirectional override, a
// zero-width space, a byte order mark), breaks a line or drives the
// terminal (a control character) is a usage error and nothing is written,
// on every command that takes one, as over the JSON API and Gold. Text in
// any script is taken.
func TestFormatCharactersCLI(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"override in a deposit", []string{"deposit", "chem", "10", "-d", "grant \u202e1202 tnarg"}, "--description holds the format character U+202E"},
		{"zero width space in an account", []string{"account", "create", "bio", "--description", "b\u200bio"}, "--description holds the format character U+200B"},
		{"byte order mark in a user", []string{"user", "add", "amy", "-d", "\ufeffAmy"}, "--description holds the format character U+FEFF"},
		{"isolate in a withdrawal", []string{"withdraw", "chem", "1", "-d", "\u2067x\u2069"}, "format character U+2067"},
		{"escape in a deposit", []string{"deposit", "chem", "10", "-d", "grant\x1b[2K\rforged"}, "--description holds the control character U+001B"},
		{"line separator in a machine", []string{"machine", "add", "hpc9", "-d", "a\u2028b"}, "U+2028"},
		{"invalid UTF-8", []string{"deposit", "chem", "10", "-d", "grant \xff"}, "--description is not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) { b.refused(t, exitUsage, c.says, c.args...) })
	}
	b.ok("deposit", "chem", "10", "-d", "Förderung für Ökologie, 研究 ☃")
	if out := b.ok("journal", "--kind", "deposit"); !strings.Contains(out, "Förderung für Ökologie, 研究 ☃") {
		t.Errorf("the journal does not show the description as given:\n%s", out)
	}
}
