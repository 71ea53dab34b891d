package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// The completion scripts hand ingot the words typed after `ingot`, the word
// being completed last, through the hidden command __complete, which
// prints the candidates one a line: command names, flags, and names of
// accounts, projects, users and machines where the bank named by the typed
// --db or --server (or INGOT_DB, INGOT_SERVER) answers within
// namesTimeout. The scripts are the same whatever the environment.
const (
	bashCompletion = `# bash completion for ingot: eval "$(ingot completion bash)"
_ingot() {
  local IFS=$'\n'
  COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _ingot ingot
`
	zshCompletion = `#compdef ingot
# zsh completion for ingot: eval "$(ingot completion zsh)", or save as _ingot in $fpath
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion
	fishCompletion = `# fish completion for ingot: ingot completion fish > ~/.config/fish/completions/ingot.fish
complete -c ingot -f -a '(ingot __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`
)

// namesTimeout bounds the wait for the bank's names: a shell must not hang
// on a busy server or on a file another process holds.
const namesTimeout = 2 * time.Second

func completionCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:      "completion",
			Usage:     "print a shell completion script (commands, flags, and the bank's account, project, user and machine names): eval \"$(ingot completion bash)\"",
			ArgsUsage: "bash|zsh|fish",
			Action:    completion,
		},
		{Name: "__complete", Hidden: true, SkipFlagParsing: true, Action: complete},
	}
}

func completion(c *cli.Context) error {
	a, err := args(c, "SHELL")
	if err != nil {
		return err
	}
	script, ok := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}[a[0]]
	if !ok {
		return usageError{fmt.Sprintf("completion: unknown shell %q (bash, zsh or fish)", a[0])}
	}
	_, err = fmt.Fprint(c.App.Writer, script)
	return err
}

// complete prints the candidates for the last of its arguments.
func complete(c *cli.Context) error {
	words := c.Args().Slice()
	if len(words) == 0 {
		words = []string{""}
	}
	typed, cur := words[:len(words)-1], words[len(words)-1]
	for _, s := range candidates(c.App, typed, cur) {
		if strings.HasPrefix(s, cur) {
			fmt.Fprintln(c.App.Writer, s)
		}
	}
	return nil
}

// typedLine is what the words before the one being completed say: the
// command they reach, its positional arguments so far, a flag waiting for
// its value, and the flags that say which bank to ask for names.
type typedLine struct {
	path       []string
	cmd        *cli.Command // nil at the top level
	flags      []cli.Flag
	positional []string
	pending    cli.Flag // a flag given last, without its value
	bank       []string
}

// parseTyped walks the words as interspersed reads a command line.
func parseTyped(app *cli.App, typed []string) typedLine {
	line := typedLine{flags: app.Flags}
	cmds := app.Commands
	common := commonFlags()
	for i := 0; i < len(typed); {
		if n := flagTokens(line.flags, typed[i:]); n > 0 {
			name, _, hasValue := strings.Cut(strings.TrimLeft(typed[i], "-"), "=")
			if f := findFlag(common, name); f != nil && f != findFlag(common, "json") {
				line.bank = append(line.bank, typed[i:i+n]...)
			}
			if f := findFlag(line.flags, name); f != nil && takesValue(f) && !hasValue && n == 1 {
				line.pending = f
			}
			i += n
			continue
		}
		if cmd := findCommand(cmds, typed[i]); cmd != nil && len(line.positional) == 0 {
			line.path, line.cmd, line.flags, cmds = append(line.path, cmd.Name), cmd, cmd.Flags, cmd.Subcommands
		} else {
			line.positional = append(line.positional, typed[i])
		}
		i++
	}
	return line
}

func candidates(app *cli.App, typed []string, cur string) []string {
	line := parseTyped(app, typed)
	switch {
	case line.pending != nil:
		return names(app, line.bank, flagKind(line.pending))
	case strings.HasPrefix(cur, "-"):
		return flagNames(line.flags)
	case line.cmd == nil:
		return commandNames(app.Commands)
	case len(line.cmd.Subcommands) > 0:
		return commandNames(line.cmd.Subcommands)
	}
	return names(app, line.bank, argKind(line.path, line.cmd.ArgsUsage, len(line.positional)))
}

func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

func flagNames(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			out = append(out, strings.Repeat("-", min(len(n), 2))+n)
		}
	}
	return out
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}

// The kinds of names the bank can list.
const (
	kindNone    = ""
	kindAccount = "account"
	kindProject = "project"
	kindNode    = "node"
	kindUser    = "user"
	kindMachine = "machine"
)

// placeholderKinds are the kinds asked for by the placeholders of a
// command's arguments or a flag's usage.
var placeholderKinds = map[string]string{"ACCOUNT": kindAccount, "PROJECT": kindProject, "NODE": kindNode, "FROM": kindNode,
	"TO": kindNode, "TARGET": kindNode, "USER": kindUser, "MACHINE": kindMachine}

// argKind is the kind of the positional argument at index i of a command:
// from its placeholder, or for NAME from the command's group (`project
// show NAME`), except where NAME is a new one (create, add).
func argKind(path []string, argsUsage string, i int) string {
	fields := strings.Fields(argsUsage)
	if len(fields) == 0 {
		return kindNone
	}
	p := fields[min(i, len(fields)-1)]
	if i >= len(fields) && !strings.Contains(p, "...") {
		return kindNone
	}
	p = strings.Trim(p, "[].")
	if p == "NAME" {
		if slices.Contains([]string{"create", "add"}, path[len(path)-1]) {
			return kindNone
		}
		return placeholderKinds[strings.ToUpper(path[0])]
	}
	return placeholderKinds[p]
}

// flagKind is the kind of a flag's value: its usage's placeholder, else its
// name (--user, --machine).
func flagKind(f cli.Flag) string {
	if df, ok := f.(cli.DocGenerationFlag); ok {
		// The placeholder is the usage's first `quoted` word, as in help.
		if _, rest, ok := strings.Cut(df.GetUsage(), "`"); ok {
			if p, _, ok := strings.Cut(rest, "`"); ok {
				return placeholderKinds[p]
			}
		}
	}
	return placeholderKinds[strings.ToUpper(f.Names()[0])]
}

// names lists the bank's names of a kind by running ingot's own list
// commands with the typed bank flags; nothing if the bank does not answer
// in time.
func names(app *cli.App, bank []string, kind string) []string {
	var groups []string
	switch kind {
	case kindNone:
		return nil
	case kindNode:
		groups = []string{kindAccount, kindProject}
	default:
		groups = []string{kind}
	}
	found := make(chan []string, 1)
	go func() {
		var out []string
		for _, g := range groups {
			var buf bytes.Buffer
			if run(append(append([]string{app.Name}, bank...), g, "list", "--json"), &buf, io.Discard) != exitOK {
				break
			}
			var items []struct{ Name string }
			if json.Unmarshal(buf.Bytes(), &items) == nil {
				for _, it := range items {
					out = append(out, it.Name)
				}
			}
		}
		found <- out
	}()
	select {
	case out := <-found:
		return out
	case <-time.After(namesTimeout):
		return nil
	}
}
