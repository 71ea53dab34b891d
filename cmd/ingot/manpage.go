package main

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// The sections of the manual that urfave/cli does not write: EXIT STATUS
// from exitCodes, ENVIRONMENT from the flags' variables and the variables
// read without a flag, FILES from the layout of docs/operations.md.

// manSections is the roff of the manual's EXIT STATUS, ENVIRONMENT and
// FILES sections for app.
func manSections(app *cli.App) string {
	var b strings.Builder
	b.WriteString("\n.SH EXIT STATUS\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.code, roffText(e.meaning))
	}

	b.WriteString("\n.SH ENVIRONMENT\n")
	b.WriteString(roffText("A setting given by a flag on the command line (before or after the command's name) beats any " +
		"variable: `--db FILE` works on the file whatever `INGOT_SERVER` or `INGOT_STORE` say, and `--use-munge` whatever " +
		"`INGOT_KEY_FILE` says. Then come the variables below, then `serve`'s config file (`--config`), then the default. " +
		"The manual and the completion scripts are the same whatever they say.\n"))
	for _, v := range environment(app) {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", v.name, roffText(v.what))
	}

	b.WriteString("\n.SH FILES\n")
	b.WriteString(roffText("Where the .deb and the .rpm put them, and the service makes them (`make install` puts the " +
		"installed files under its `PREFIX`, `/usr/local` by default); docs/operations.md has the whole layout.\n"))
	for _, f := range manFiles {
		fmt.Fprintf(&b, ".TP\n.I %s\n%s\n", roffEscape(f.path), roffText(f.what))
	}
	return b.String()
}

// manVariable is a variable of the manual's ENVIRONMENT.
type manVariable struct{ name, what string }

// unflaggedVariables are the INGOT_* variables that no flag has: read by
// the code itself (a test finds every INGOT_ name in ingot's sources, and
// wants each in the manual).
var unflaggedVariables = []manVariable{
	{"INGOT_PROGRESS_INTERVAL", "how often long work (a backup, a local `audit`, `migrate`) writes a line of its progress " +
		"to standard error when that is not a terminal: a Go duration (`1m`); default 10s. On a terminal the line is " +
		"redrawn in place instead."},
}

// environment is every INGOT_* variable of app, sorted: each flag's
// (the flags of alternativeGroups have theirs read by precedence.go), with
// the flags that read it, and unflaggedVariables.
func environment(app *cli.App) []manVariable {
	type use struct {
		flags []string
		usage string
	}
	uses := map[string]*use{}
	add := func(variable, flag, usage string) {
		u, ok := uses[variable]
		if !ok {
			u = &use{usage: usage}
			uses[variable] = u
		}
		if !slices.Contains(u.flags, flag) {
			u.flags = append(u.flags, flag)
		}
	}
	var walk func(path string, flags []cli.Flag, commands []*cli.Command)
	walk = func(path string, flags []cli.Flag, commands []*cli.Command) {
		for _, f := range flags {
			d, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			name := strings.TrimSpace(path + " --" + f.Names()[0])
			variables := d.GetEnvVars()
			if _, variable, grouped := groupOf(f.Names()[0]); grouped && path == "" {
				variables = append(variables, variable)
			}
			for _, v := range variables {
				if strings.HasPrefix(v, "INGOT_") {
					add(v, name, d.GetUsage())
				}
			}
		}
		for _, c := range commands {
			walk(strings.TrimSpace(path+" "+c.Name), c.Flags, c.Subcommands)
		}
	}
	walk("", app.Flags, app.Commands)

	out := slices.Clone(unflaggedVariables)
	for v, u := range uses {
		usage := strings.TrimSpace(strings.ReplaceAll(u.usage, "(or "+v+")", ""))
		what := strings.Join(u.flags, ", ") + ": " + usage
		if group, _, grouped := groupOf(strings.TrimPrefix(u.flags[0], "--")); grouped {
			var others []string
			for _, a := range group {
				others = append(others, "--"+a.flag)
			}
			what += "; read only when none of " + strings.Join(others, ", ") + " is on the command line"
		}
		out = append(out, manVariable{v, what})
	}
	slices.SortFunc(out, func(a, b manVariable) int { return cmp.Compare(a.name, b.name) })
	return out
}

// manFiles are the manual's FILES, as docs/operations.md lays them out.
var manFiles = []struct{ path, what string }{
	{"/etc/ingot/ingot.toml", "the server's settings, which `ingot.service` runs `ingot serve --config` with (docs/server.md lists the keys)"},
	{"/var/lib/ingot/ingot.db", "the bank the service serves (`--db`, `INGOT_DB`: any file)"},
	{"/var/lib/ingot/server.key", "the server key that seals the API clients' secrets: `server.key` beside the bank unless `--server-key` " +
		"says otherwise; mode 0600, backed up apart from the bank"},
	{"/var/lib/ingot/ingot.db.schema<N>.bak", "the bank as it was before an upgrade from schema N (`ingot upgrade`, `serve`, or a change, " +
		"beside any bank file)"},
	{"/var/lib/ingot/backups/ingot-<UTC time>.db", "the daily copies of `ingot-backup.timer`, the newest 14 kept; a `.ingot-backup-*` " +
		"file beside them is a backup that did not finish, removed once an hour old"},
	{"/run/ingot/ingot.sock", "the server's local socket while it runs (`serve --socket`): root and the server's user are admin there, " +
		"others the bank user of their login name"},
	{"~/ingot-admin.key", "a client's key file, `KEYID:SECRET` on one line, its owner's alone (mode 0600): `--key-file`, `INGOT_KEY_FILE`; " +
		"`ingot client add --key-out` writes one"},
	{"/usr/lib/systemd/system/ingot.service", "the server as a systemd service; `ingot-backup.service` and `ingot-backup.timer` beside it " +
		"make the daily copy, with `/usr/libexec/ingot/ingot-backup`"},
}

// codeSpan is a Markdown code span.
var codeSpan = regexp.MustCompile("`([^`]*)`")

// roffText is Markdown text as roff: code spans in bold, escaped.
func roffText(s string) string {
	s = roffEscape(s)
	return codeSpan.ReplaceAllString(s, `\fB$1\fR`)
}

// roffEscape escapes text for roff: backslashes, and a control character
// (a point or an apostrophe) that begins a line.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
