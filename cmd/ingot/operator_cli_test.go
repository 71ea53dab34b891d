package main

import (
	"strings"
	"testing"
)

// The tests of this file are issue 30's: a command line that never
// surprises a new operator.

// TestHugeInputIsNotEchoed: a 5,000-character name is refused with a
// message that names the problem and quotes the start of the input, not
// all of it.
func TestHugeInputIsNotEchoed(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	huge := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"account name", []string{"account", "create", huge}, exitUsage},
		{"project name", []string{"project", "create", "chem." + huge + "!"}, exitUsage},
		{"account as project", []string{"project", "create", huge}, exitUsage},
		{"unknown account", []string{"deposit", huge, "5"}, exitNotFound},
		{"amount", []string{"deposit", "chem", huge}, exitUsage},
		{"quota", []string{"project", "create", "chem.lab1", "--quota", "dynamic:" + huge}, exitUsage},
		{"user", []string{"user", "add", huge + "!"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.refused(t, tc.code, "characters)", tc.args...)
			if out, _ := b.run(tc.args...); len(out) > 400 {
				t.Errorf("the message has %d bytes:\n%.500s", len(out), out)
			}
		})
	}
}
