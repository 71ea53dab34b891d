package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/urfave/cli/v2"
)

// One rule for every global flag and variable: a flag given on the command
// line beats any variable. urfave/cli applies it flag by flag (--db beats
// INGOT_DB), but some flags are alternatives to one another, and a
// variable of one must not beat a flag of another: an admin whose profile
// sets INGOT_SERVER and who types `ingot --db backup.db deposit ...` means
// the file, not the live bank. So the flags of such a group have no
// EnvVars of their own; flagString and flagBool read their variables only
// when no flag of the group is on the command line.

// alternative is a flag that excludes others, and its variable.
type alternative struct{ flag, variable string }

// alternativeGroups are the flags that say the same thing in other ways:
// which bank (a file, a PostgreSQL store, a server) and who the client is
// to a server (a key, or a MUNGE credential).
var alternativeGroups = [][]alternative{
	{{"db", "INGOT_DB"}, {"store", "INGOT_STORE"}, {"server", "INGOT_SERVER"}},
	{{"key-file", "INGOT_KEY_FILE"}, {"use-munge", "INGOT_USE_MUNGE"}},
}

// groupOf is the group of a flag, and its variable; ok is false for a flag
// in none.
func groupOf(name string) (group []alternative, variable string, ok bool) {
	for _, g := range alternativeGroups {
		if i := slices.IndexFunc(g, func(a alternative) bool { return a.flag == name }); i >= 0 {
			return g, g[i].variable, true
		}
	}
	return nil, "", false
}

// onCommandLine reports whether a flag is on the command line, at any level:
// for the flags of alternativeGroups, which have no variables of their own,
// whether it has a value.
func onCommandLine(c *cli.Context, name string) bool {
	for _, ctx := range c.Lineage() {
		switch v := ctx.Value(name).(type) {
		case string:
			if v != "" {
				return true
			}
		case bool:
			if v {
				return true
			}
		}
	}
	return false
}

// groupOnCommandLine reports whether any flag of a group is on the command
// line.
func groupOnCommandLine(c *cli.Context, group []alternative) bool {
	return slices.ContainsFunc(group, func(a alternative) bool { return onCommandLine(c, a.flag) })
}

// fromVariable is the value of a grouped flag's variable, if no flag of its
// group is on the command line.
func fromVariable(c *cli.Context, name string) string {
	group, variable, ok := groupOf(name)
	if !ok || groupOnCommandLine(c, group) {
		return ""
	}
	return os.Getenv(variable)
}

// noteUnusedServer says, on standard error, that --db or --store names
// the bank although INGOT_SERVER names a server: the one case where the
// rule may surprise, since the command then changes another bank than the
// one the admin's other commands reach.
func noteUnusedServer(c *cli.Context) {
	server := os.Getenv("INGOT_SERVER")
	if server == "" || onCommandLine(c, "server") || !(onCommandLine(c, "db") || onCommandLine(c, "store")) {
		return
	}
	flag := "--db " + flagString(c, "db")
	if onCommandLine(c, "store") {
		flag = "--store"
	}
	fmt.Fprintf(c.App.ErrWriter, "ingot: working on the bank of %s, not on INGOT_SERVER=%s (a flag beats a variable)\n", flag, server)
}
