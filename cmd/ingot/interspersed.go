package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags follow positional arguments (`ingot deposit chem
// 100 --end 2027-01-01`), which urfave/cli v2 does not parse: it moves the
// leaf command's own flags, with their values, in front of its positional
// arguments. Any other "--name" token moves too, so that the parser reports
// it as unknown; a single-dash token that is not one of the command's flags
// (such as "-5" given as an amount) stays where it is; "--" ends the flags.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	i := 1
	for i < len(args) {
		tok := args[i]
		if n := flagTokens(flags, args[i:]); n > 0 {
			out = append(out, args[i:i+n]...)
			i += n
			continue
		}
		cmd := findCommand(cmds, tok)
		if cmd == nil {
			break
		}
		out = append(out, tok)
		i++
		if cmd.SkipFlagParsing { // __complete: its words as typed
			return append(out, args[i:]...)
		}
		flags, cmds = cmd.Flags, cmd.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	var positional []string
	for i < len(args) {
		if args[i] == "--" {
			// The end of the flags goes before every positional argument,
			// those before it included: the parser stops at the first of
			// them and would take a later "--" for an argument.
			return append(append(append(out, "--"), positional...), args[i+1:]...)
		}
		if n := flagTokens(flags, args[i:]); n > 0 {
			out = append(out, args[i:i+n]...)
			i += n
			continue
		}
		positional = append(positional, args[i])
		i++
	}
	return append(out, positional...)
}

// flagTokens is how many tokens at the start of rest form one of the
// flags (1, or 2 for a flag and its separate value), or 0.
func flagTokens(flags []cli.Flag, rest []string) int {
	tok := rest[0]
	if !strings.HasPrefix(tok, "-") || tok == "-" {
		return 0
	}
	name, _, hasValue := strings.Cut(strings.TrimLeft(tok, "-"), "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, isBool := f.(*cli.BoolFlag); isBool || hasValue || len(rest) == 1 {
				return 1
			}
			return 2
		}
	}
	if strings.HasPrefix(tok, "--") {
		return 1
	}
	return 0
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
