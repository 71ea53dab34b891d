package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// commandPaths are the paths of the commands that run an action of their
// own ("lien place"; "quote" and "charge", which also have subcommands),
// not only show their subcommands (unknownCommand).
func commandPaths(prefix string, cmds []*cli.Command) []string {
	group := reflect.ValueOf(cli.ActionFunc(unknownCommand)).Pointer()
	var paths []string
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		path := strings.TrimSpace(prefix + " " + c.Name)
		if len(c.Subcommands) == 0 || (c.Action != nil && reflect.ValueOf(c.Action).Pointer() != group) {
			paths = append(paths, path)
		}
		paths = append(paths, commandPaths(path, c.Subcommands)...)
	}
	return paths
}

// TestEveryCommandHonoursJSON: every command prints one JSON document on
// standard output with --json, its answer or its error, and nothing else
// there; the commands whose output is another program's input say why.
func TestEveryCommandHonoursJSON(t *testing.T) {
	b := newCLIBank(t)
	dir := t.TempDir()
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("machine", "add", "hpc1", "--cores", "4")
	b.ok("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	b.ok("deposit", "chem", "100000")

	// The cases, in the order they run: each a command line, its path the
	// words before its arguments.
	lines := []string{
		"init --db " + filepath.Join(dir, "new.db"),
		"account create bio", "account list", "account show chem", "account modify bio -d x",
		"account deactivate bio", "account reactivate bio",
		"project create chem.lab2", "project policy chem.lab2 --quota shares:1", "project list", "project show chem.lab1", "project modify chem.lab2 -d y",
		"project deactivate chem.lab2", "project reactivate chem.lab2",
		"user add bob", "user modify bob -d z", "user list", "user modify bob --email bob@example.org", "user contacts",
		"notify --dry-run --smtp-server 127.0.0.1:1 --notify-admin ops@example.org",
		"machine add hpc2", "machine modify hpc2 --cores 8", "machine list",
		"deposit chem 5", "withdraw chem 1", "transfer chem bio 1", "allocation modify 1 --credit-limit 5",
		"allocation schedule chem 10 --every month --start 2020-01-01 --count 2", "allocation schedule run", "allocation schedule list",
		"allocation schedule show 1", "allocation schedule chem 10 --every year", "allocation schedule modify 2 --amount 20", "allocation schedule cancel 2",
		"usage", "balance", "statement chem", "journal --node chem", "audit",
		"backup " + filepath.Join(dir, "copy.db"),
		"rate list", "rate add VBR GPUs 2", "rate delete VBR GPUs", "rate zone UTC",
		"rate window add night --start 22:00 --end 06:00 --multiplier 0.5", "rate window delete night",
		"policy show", "policy set DEBITALLWC", "policy fallback chem", "policy grace 5m",
		"quote --machine hpc1 --procs 1 --wallclock 1h --user amy", "quote list",
		"lien place j1 --machine hpc1 --user amy --procs 1 --wallclock 1h", "lien list", "lien show j1 --machine hpc1",
		"lien extend j1 --machine hpc1 --wallclock 2h", "lien modify j1 --machine hpc1 --end now+3h",
		"lien place j2 --machine hpc1 --user amy --procs 1 --wallclock 1h", "lien release j2 --machine hpc1",
		"charge j1 --machine hpc1 --procs 1 --wallclock-used 30m", "charge list", "refund --job j1 --machine hpc1",
		"lien sweep",
		"reservation add r1 --machine hpc1 --procs 1 --start now-1h --end now+1h --user amy", "reservation list",
		"reservation flush r1", "reservation end r1",
		"hfs show chem", "preempt chem.lab1 1 --machine hpc1", "fairshare chem",
		"client add sched --role scheduler --scope hpc1 --key-out " + filepath.Join(dir, "s.key"),
		"client list", "client rotate sched --key-out " + filepath.Join(dir, "s2.key"), "client revoke sched KEYID",
		"peer add central --url http://127.0.0.1:1 --project chem.lab1 --key-out " + filepath.Join(dir, "p.key"),
		"peer key central " + filepath.Join(dir, "s.key"), "peer modify central --when-away accept --credit-line 5", "peer list", "peer show central",
		"deposit chem 1 --at central", "peer transactions --pending", "peer reconcile central",
		"peer statement central --period 2026-11", "peer remove central",
		"version", "upgrade",
		"archive --before 2000-01-01 " + filepath.Join(dir, "archive.db"),
		"migrate --from " + b.db + " --to " + filepath.Join(dir, "migrated.db"),
		"web-login",
		"healthcheck --listen 127.0.0.1:1",
	}
	// Commands whose output is another program's input, or a person's.
	notJSON := map[string]string{
		"man":                 "a manual page in roff",
		"completion":          "a shell's completion script",
		"serve":               "a server: its log is JSON already",
		"hfs compute":         "prints JSON whatever the flags",
		"rate set":            "reads JSON; prints the table as rate list --json does",
		"slurm setup":         "Slurm's scripts and slurm.conf lines",
		"slurm submit":        "job_submit.lua's protocol",
		"slurm submit-server": "a server answering job_submit.lua on its socket",
		"slurm prolog":        "Slurm's prolog: an exit code",
		"slurm epilog":        "Slurm's epilog: an exit code",
		"slurm sync":          "a report for cron's mail",
		"slurm import":        "sacctmgr's accounts, as a plan",
	}
	// Commands the cases cannot run here, whose error is JSON all the same.
	refusedHere := []string{
		"archive",        // nothing in the bank was made before 2000
		"web-login",      // a server's: refused on a file
		"healthcheck",    // no server listens on port 1
		"peer reconcile", // nor the peer it asks
	}
	paths := commandPaths("", newApp(&bytes.Buffer{}, &bytes.Buffer{}).Commands)
	covered := map[string]bool{}
	for _, line := range lines {
		args := strings.Fields(strings.ReplaceAll(line, "KEYID", firstKeyID(b, "sched")))
		path := longestPath(paths, args)
		covered[path] = true
		var stdout, stderr bytes.Buffer
		run(append(append([]string{"ingot"}, b.global...), append(args, "--json")...), &stdout, &stderr)
		dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
		var doc any
		if err := dec.Decode(&doc); err != nil || dec.More() {
			t.Errorf("ingot %s --json: not one JSON document on stdout (%v):\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		if obj, isObject := doc.(map[string]any); isObject && obj["error"] != nil && !slices.Contains(refusedHere, path) {
			t.Errorf("ingot %s --json: %v; want its answer (the case should succeed)", strings.Join(args, " "), obj["error"])
		}
	}
	for _, path := range paths {
		if _, exempt := notJSON[path]; !exempt && !covered[path] && path != "help" {
			t.Errorf("ingot %s: no case; add one, or say in notJSON why it prints no JSON", path)
		}
	}
}

// longestPath is the longest command path that args start with.
func longestPath(paths []string, args []string) string {
	best := ""
	for _, p := range paths {
		words := strings.Fields(p)
		if len(words) <= len(args) && slices.Equal(words, args[:len(words)]) && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// firstKeyID is the id of a client's first key, or "" while it has none.
func firstKeyID(b *cliBank, client string) string {
	out, code := b.run("client", "list", "--parsable")
	if code != exitOK {
		return ""
	}
	for line := range strings.Lines(out) {
		if fields := strings.Split(strings.TrimSpace(line), "|"); len(fields) > 2 && fields[0] == client {
			return fields[4]
		}
	}
	return ""
}
