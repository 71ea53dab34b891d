package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// manSection is the body of the manual's section .SH name, up to the next.
func manSection(t *testing.T, man, name string) string {
	t.Helper()
	_, body, ok := strings.Cut(man, "\n.SH "+name+"\n")
	if !ok {
		t.Fatalf("the manual has no section %s", name)
	}
	body, _, _ = strings.Cut(body, "\n.SH ")
	return body
}

// manTags are the tags of a section's .TP paragraphs (the line after .TP,
// without its font macro).
func manTags(section string) []string {
	var tags []string
	lines := strings.Split(section, "\n")
	for i, l := range lines {
		if l == ".TP" && i+1 < len(lines) {
			_, tag, _ := strings.Cut(lines[i+1], " ")
			tags = append(tags, tag)
		}
	}
	return tags
}

// TestManPageExitStatus checks the manual's EXIT STATUS: every exit code
// with its meaning, as README.md's table says it (both come from
// exitCodes, which this holds equal to the README's table), including 130
// for an interrupted command, and every code a server's refusal maps to.
func TestManPageExitStatus(t *testing.T) {
	man, _, code := runCLI("man")
	if code != exitOK {
		t.Fatalf("ingot man: exit %d", code)
	}
	status := manSection(t, man, "EXIT STATUS")
	var codes []int
	for _, e := range exitCodes {
		codes = append(codes, e.code)
		if want := ".TP\n.B " + strconv.Itoa(e.code) + "\n" + roffText(e.meaning) + "\n"; !strings.Contains(status, want) {
			t.Errorf("EXIT STATUS lacks\n%s", want)
		}
	}
	for _, c := range append(slices.Collect(mapValues(serverExitCodes)), exitOK, exitError, exitAudit, exitInterrupted) {
		if !slices.Contains(codes, c) {
			t.Errorf("exit code %d is not in exitCodes (the manual's EXIT STATUS, README's table)", c)
		}
	}
	if !strings.Contains(status, ".B 130\nstopped by Ctrl-C") {
		t.Errorf("EXIT STATUS does not say what 130 is:\n%s", status)
	}

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n### Exit codes\n")
	if !ok {
		t.Fatal("README.md has no section Exit codes")
	}
	table, _, _ = strings.Cut(table, "\n\n"+"Through") // the paragraph after the table
	var rows []string
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| (.*) \|$`).FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1]+" "+m[2])
	}
	var want []string
	for _, e := range exitCodes {
		want = append(want, strconv.Itoa(e.code)+" "+e.meaning)
	}
	if !slices.Equal(rows, want) {
		t.Errorf("README.md's exit codes:\n%s\nexitCodes (the manual's):\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestManPageEnvironment checks the manual's ENVIRONMENT against ingot's
// sources: every INGOT_* variable that the packages of the ingot binary
// name (the flags' EnvVars, the variables precedence.go reads itself, and
// the ones read without a flag) is there, and nothing else; it says that a
// flag given beats any variable.
func TestManPageEnvironment(t *testing.T) {
	man, _, code := runCLI("man")
	if code != exitOK {
		t.Fatalf("ingot man: exit %d", code)
	}
	env := manSection(t, man, "ENVIRONMENT")
	if !strings.Contains(env, "beats any variable") {
		t.Errorf("ENVIRONMENT does not say that a flag beats any variable:\n%.400s", env)
	}
	listed := manTags(env)
	if !slices.IsSorted(listed) {
		t.Errorf("ENVIRONMENT is not sorted: %q", listed)
	}

	// The non-test Go files of this module's packages in the binary.
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	variable := regexp.MustCompile(`"(INGOT_[A-Z0-9_]+)"`)
	named := map[string]string{} // variable: a file naming it
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSpace(line), "|")
		if !strings.HasPrefix(fields[0], root+string(filepath.Separator)) {
			continue // not this module's
		}
		for _, f := range fields[1:] {
			path := filepath.Join(fields[0], f)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range variable.FindAllStringSubmatch(string(src), -1) {
				named[m[1]] = path
			}
		}
	}
	for _, v := range []string{"INGOT_DB", "INGOT_STORE", "INGOT_SERVER", "INGOT_KEY_FILE", "INGOT_USE_MUNGE", "INGOT_LISTEN", "INGOT_PROGRESS_INTERVAL"} {
		if named[v] == "" {
			t.Errorf("the sources of ingot do not name %s: the test does not see them", v)
		}
	}
	for v, path := range named {
		if !slices.Contains(listed, v) {
			t.Errorf("%s, read in %s, is not in the manual's ENVIRONMENT", v, path)
		}
	}
	for _, v := range listed {
		if named[v] == "" {
			t.Errorf("the manual's ENVIRONMENT lists %s, which ingot does not read", v)
		}
	}
	for _, v := range []string{"INGOT_DB", "INGOT_SERVER", "INGOT_KEY_FILE"} {
		if !regexp.MustCompile(`\.B ` + v + `\n--[a-z-]+: .*read only when none of`).MatchString(env) {
			t.Errorf("ENVIRONMENT does not give %s's flag and when the variable is read", v)
		}
	}
}

// TestManPageFiles checks that the manual's FILES names the files that
// docs/operations.md lays out: the config, and every file ingot makes as
// it runs.
func TestManPageFiles(t *testing.T) {
	man, _, code := runCLI("man")
	if code != exitOK {
		t.Fatalf("ingot man: exit %d", code)
	}
	files := manTags(manSection(t, man, "FILES"))
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, made, ok := strings.Cut(string(doc), "Made by ingot as it runs")
	if !ok {
		t.Fatal("docs/operations.md has no table of the files ingot makes")
	}
	made, _, _ = strings.Cut(made, "\n\n## ")
	want := []string{"/etc/ingot/ingot.toml", "/usr/lib/systemd/system/ingot.service"}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(made, -1) {
		want = append(want, m[1])
	}
	if len(want) < 5 {
		t.Fatalf("docs/operations.md's table of the files ingot makes: %q", want)
	}
	for _, f := range want {
		if !slices.Contains(files, f) {
			t.Errorf("the manual's FILES lacks %s (docs/operations.md); it has %q", f, files)
		}
	}
}
