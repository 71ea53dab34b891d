package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
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

// TestEveryFlagHasHelp: every flag of every command says what it does in
// --help, and no usage line says "a account".
func TestEveryFlagHasHelp(t *testing.T) {
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := path + " " + c.Name
			if strings.Contains(c.Usage, "a account") {
				t.Errorf("%s: usage %q", name, c.Usage)
			}
			for _, f := range c.Flags {
				if df, ok := f.(cli.DocGenerationFlag); ok && df.GetUsage() == "" {
					t.Errorf("%s --%s has no help text", name, f.Names()[0])
				}
			}
			walk(name, c.Subcommands)
		}
	}
	walk("ingot", newApp(io.Discard, io.Discard).Commands)
	var out bytes.Buffer
	run([]string{"ingot", "account", "--help"}, &out, &out)
	if !strings.Contains(out.String(), "create an account") {
		t.Errorf("ingot account --help:\n%s", &out)
	}
}
