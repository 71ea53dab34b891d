package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

// runCLI runs the command line in process and returns its output (stdout
// then stderr) and exit code.
func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"ingot"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestVersion(t *testing.T) {
	var b buildInfo
	out, _, code := runCLI("version", "--json")
	if err := json.Unmarshal([]byte(out), &b); code != exitOK || err != nil {
		t.Fatalf("version --json: exit %d, %v\n%s", code, err, out)
	}
	if b.Version != version || b.Go != runtime.Version() || b.Schema != boltstore.SchemaVersion || b.PostgresSchema != pgstore.SchemaVersion || b.Commit == "" {
		t.Errorf("version --json = %+v", b)
	}
	plain, _, code := runCLI("version")
	flag, _, flagCode := runCLI("--version")
	if code != exitOK || flagCode != exitOK || plain != flag {
		t.Errorf("version (exit %d) and --version (exit %d) differ:\n%s\n%s", code, flagCode, plain, flag)
	}
	for _, want := range []string{"ingot " + version + "\n", "go     " + runtime.Version() + "\n", fmt.Sprintf("schema %d (bank files), %d (PostgreSQL)\n", boltstore.SchemaVersion, pgstore.SchemaVersion)} {
		if !strings.Contains(plain, want) {
			t.Errorf("version lacks %q:\n%s", want, plain)
		}
	}
	if _, errOut, code := runCLI("version", "extra"); code != exitUsage || !strings.Contains(errOut, "version takes no arguments") {
		t.Errorf("version extra: exit %d, %s", code, errOut)
	}
}

// TestCommandLineMistakes: an unknown command is a usage error (exit 2)
// naming the nearest command; help works as a command, for the whole
// command line and for each command.
func TestCommandLineMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"nosuch"}, exitUsage, `ingot: "nosuch" is not a command of ingot`},
		{[]string{"depost", "chem", "1"}, exitUsage, `did you mean "deposit"?`},
		{[]string{"lien", "nosuch"}, exitUsage, `"nosuch" is not a command of ingot lien`},
		{[]string{"help"}, exitOK, "COMMANDS:"},
		{[]string{"help", "deposit"}, exitOK, "ingot deposit - deposit credits"},
		{[]string{"help", "lien"}, exitOK, "ingot lien - "},
		{[]string{"lien", "help", "place"}, exitOK, "ingot lien place - "},
		{[]string{"lien"}, exitOK, "ingot lien - "},
		{[]string{"help", "nosuch"}, exitUsage, "No help topic for 'nosuch'"},
		{[]string{"--db", os.TempDir(), "balance"}, exitUnavailable, "is a directory, not a bank file"},
	} {
		out, errOut, code := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.says) {
			t.Errorf("ingot %s: exit %d, %s%s; want exit %d saying %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.says)
		}
	}
	notBank := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notBank, []byte("not a bank"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("--db", notBank, "balance"); code != exitUnavailable || !strings.Contains(errOut, "not an ingot bank") {
		t.Errorf("a file that is not a bank: exit %d, %s", code, errOut)
	}
	if raw, _ := os.ReadFile(notBank); string(raw) != "not a bank" {
		t.Errorf("a file that is not a bank was changed: %q", raw)
	}
}

// TestGeneratedTextIgnoresTheEnvironment: the manual and the completion
// scripts are the same whatever INGOT_* says, with or without a server
// named; the manual shows the key file's format.
func TestGeneratedTextIgnoresTheEnvironment(t *testing.T) {
	commands := [][]string{{"man"}, {"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}}
	clean := map[string]string{}
	for _, env := range []string{"", "set"} {
		for _, v := range []string{"INGOT_SERVER", "INGOT_KEY_FILE", "INGOT_DB"} {
			value := ""
			if env != "" {
				value = "/from/the/environment/" + v
			}
			t.Setenv(v, value)
		}
		for _, args := range commands {
			out, errOut, code := runCLI(args...)
			key := strings.Join(args, " ")
			if code != exitOK || errOut != "" {
				t.Fatalf("ingot %s with the environment %q: exit %d, %s", key, env, code, errOut)
			}
			if env == "" {
				clean[key] = out
			} else if out != clean[key] {
				t.Errorf("ingot %s differs when INGOT_* are set", key)
			}
		}
	}
	man := clean["man"]
	if !strings.Contains(man, "KEYID:SECRET") || strings.Contains(man, "(:)") {
		t.Errorf("the manual loses the key file's format")
	}
	// Each command lists its own flags; the common ones once, globally.
	if n := strings.Count(man, `\fB--key-file\fP`); n != 1 {
		t.Errorf("the manual lists --key-file %d times, want once", n)
	}
	if !strings.Contains(man, ".TH ingot 1") || !strings.Contains(man, "statement") {
		t.Errorf("the manual is not a section 1 page of ingot:\n%.300s", man)
	}
}

// TestCompletionCandidates: completion offers commands, flags, and the
// names the bank named on the line (or by INGOT_DB) has, of the kind the
// argument or flag asks for.
func TestCompletionCandidates(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("account", "create", "bio")
	b.ok("project", "create", "chem.lab1")
	b.ok("user", "add", "amy")
	b.ok("machine", "add", "hpc1")
	t.Setenv("INGOT_DB", "")
	db := []string{"--db", b.db}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"dep"}, []string{"deposit"}},
		{[]string{"lien", ""}, []string{"place", "list", "show", "extend", "modify", "release", "sweep"}},
		{[]string{"deposit", "--e"}, []string{"--end"}},
		{[]string{"--js"}, []string{"--json"}},
		{append(db, "deposit", ""), []string{"chem", "bio"}},
		{append(db, "deposit", "c"), []string{"chem"}},
		{[]string{"deposit", "--db", b.db, "c"}, []string{"chem"}},
		{append(db, "deposit", "chem", ""), nil},
		{append(db, "transfer", "chem", ""), []string{"chem", "bio", "chem.lab1"}},
		{append(db, "project", "show", ""), []string{"chem.lab1"}},
		{append(db, "project", "create", ""), nil},
		{append(db, "user", "modify", ""), []string{"amy"}},
		{append(db, "lien", "place", "--machine", ""), []string{"hpc1"}},
		{append(db, "lien", "place", "--user", "a"), []string{"amy"}},
		{append(db, "user", "add", "bob", "--member", "chem."), []string{"chem.lab1"}},
		{[]string{"--db", filepath.Join(t.TempDir(), "none.db"), "deposit", ""}, nil},
	} {
		out, errOut, code := runCLI(append([]string{"__complete"}, tc.words...)...)
		got := strings.Fields(out)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if code != exitOK || errOut != "" || !slices.Equal(got, want) {
			t.Errorf("complete %q: exit %d, %q %s; want %q", tc.words, code, got, errOut, want)
		}
	}
	t.Setenv("INGOT_DB", b.db)
	if out, _, _ := runCLI("__complete", "balance", ""); !strings.Contains(out, "chem.lab1") {
		t.Errorf("completion does not read INGOT_DB's bank: %q", out)
	}
}

// TestBashCompletionScript: the bash script hands ingot the words typed
// after it, the one being completed last, and offers what it prints.
func TestBashCompletionScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, _, _ := runCLI("completion", "bash")
	// ingot here is a shell function that records its arguments.
	test := script + `
ingot() { printf '%s\n' "$@" > "$ARGS"; printf 'deposit\ndeactivate\n'; }
COMP_WORDS=(ingot --db "my bank.db" de) COMP_CWORD=3
_ingot
printf '%s\n' "${COMPREPLY[@]}"
`
	args := filepath.Join(t.TempDir(), "args")
	cmd := exec.Command(bash, "-c", test)
	cmd.Env = append(os.Environ(), "ARGS="+args)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "deposit\ndeactivate\n" {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(args); string(got) != "__complete\n--db\nmy bank.db\nde\n" {
		t.Errorf("the script ran ingot with %q", got)
	}
}

// TestBalanceShowsWhatALienGets: a project's Available in `ingot balance`
// is what a lien on it would get (its HFS share), with its account's figure
// beside it; a lien of more is refused with the same figure.
func TestBalanceShowsWhatALienGets(t *testing.T) {
	b := newCLIBank(t)
	for _, args := range [][]string{
		{"account", "create", "chem"}, {"project", "create", "chem.lab1", "--quota", "dynamic:0.6"},
		{"project", "create", "chem.lab2", "--quota", "dynamic:0.4"}, {"machine", "add", "hpc1", "--cores", "4"},
		{"user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1"}, {"deposit", "chem", "1000"},
	} {
		b.ok(args...)
	}
	out := b.ok("balance", "chem.lab1", "-P")
	if !strings.Contains(out, "Node|Amount|Reserved|Balance|CreditLimit|Available|AccountAvailable\nchem.lab1|1000.00|0.00|1000.00|0.00|600.00|1000.00\n") {
		t.Errorf("balance chem.lab1:\n%s", out)
	}
	b.refused(t, exitRefused, "needs 601, 600 available", "lien", "place", "j1", "--user", "amy", "--procs", "1", "--wallclock", "601")
}
