package contrib

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/linebuf"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
)

// TestReadme runs the shell blocks of README.md in order, as written, in
// one bash, as a new user would paste them into a second shell while
// `make run` serves a new bank; and compares what they print with the
// README. It fails when a block stops working, when a command exits
// otherwise than its comment says ("(exit N)"; 0 when it says none), when
// an error a comment quotes is not what the command says, and when an
// output the README shows goes stale.
//
// What the test does in place of a person, and nothing else:
//   - `make run`: the Makefile's own recipe for it (its init and serve
//     lines, run by bash in the test's directory), with LISTEN on a free
//     port and a munged of the test's own (mungetest), whose socket is
//     INGOT_MUNGE_SOCKET for every command; the Set-up block's `make`
//     commands are not run, its export is.
//   - the README's directory is a new one: bin/ingot is the binary `make
//     build` made, proto/ is the repository's (sign.sh), var/ starts empty.
//   - the ports the README names, 8080 (make run's), 8443 (its TLS
//     server), 8090 and 8091 (its two banks), are rewritten to free ones
//     in the commands, and back in what they print.
//   - the environment is the test's without INGOT_*, with TZ=UTC.
//
// A command is what bash reads as one (a line, lines joined by a trailing
// backslash, a loop, a here-document). Comments on its lines, and comment
// lines after it, are about it. A quoted error is the comment's text from
// "ingot: " (or a leading "..."), up to "(exit N)"; each part of it between
// "..." must be in what the command printed, in order.
//
// An output block (an untagged ``` block right after a ```sh block) must be
// found, line for line and in one piece, in what its block printed
// (standard output and standard error), both normalised:
//   - every date and time (2026-11-22 06:00:00, 2026-11-22T06:00:00Z) is
//     replaced by its pattern of the same width (YYYY-MM-DD hh:mm:ss), so
//     that the columns stay aligned: most derive from the clock (now,
//     now+30d, the time of each change), and the README cannot know them;
//   - trailing spaces and trailing empty lines are dropped.
//
// Everything else must be as shown: amounts, entry, allocation and lien
// numbers, names, column widths.
func TestReadme(t *testing.T) {
	bash := needTool(t, "bash", "bash")
	for _, tool := range [][2]string{{"openssl", "openssl"}, {"curl", "curl"}, {"basenc", "coreutils"}} {
		needTool(t, tool[0], tool[1])
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(readme))

	runMake(t, "build")
	dir := t.TempDir()
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bin", "var"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(buildDir, "ingot"), filepath.Join(dir, "bin", "ingot")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "proto"), filepath.Join(dir, "proto")); err != nil {
		t.Fatal(err)
	}
	munged := mungetest.Start(t)
	env := append(operatorEnv(dir), "TZ=UTC", "INGOT_MUNGE_SOCKET="+munged.Socket)

	base := makeRun(t, bash, dir, env)
	port := strings.TrimPrefix(base, "http://127.0.0.1:")
	tlsPort := freePort(t)
	centralPort, sitePort := freePort(t), freePort(t)
	rewrite := strings.NewReplacer("127.0.0.1:8080", "127.0.0.1:"+port, "localhost:8080", "localhost:"+port, "127.0.0.1:8443", "127.0.0.1:"+tlsPort,
		"127.0.0.1:8090", "127.0.0.1:"+centralPort, "127.0.0.1:8091", "127.0.0.1:"+sitePort)
	back := strings.NewReplacer("127.0.0.1:"+port, "127.0.0.1:8080", "localhost:"+port, "localhost:8080", "127.0.0.1:"+tlsPort, "127.0.0.1:8443",
		"127.0.0.1:"+centralPort, "127.0.0.1:8090", "127.0.0.1:"+sitePort, "127.0.0.1:8091")

	var script strings.Builder
	script.WriteString("exec 2>&1\n")
	var commands []*readmeCommand
	for _, b := range blocks {
		for _, c := range b.commands {
			fmt.Fprintf(&script, "printf '\\n@@begin %d\\n'\n%s\nprintf '\\n@@end %d %%d\\n' $?\n", len(commands), rewrite.Replace(c.text), len(commands))
			commands = append(commands, c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	// Its own process group, killed at the end: what the README left in
	// the background goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		t.Fatalf("the README's commands: %v\n%s", err, out.String())
	}
	printed, codes := splitRun(t, back.Replace(out.String()), len(commands))

	failures := 0
	for i, c := range commands {
		if failures >= 10 {
			t.Fatal("more failures not shown")
		}
		switch got := codes[i]; {
		case got != c.exit:
			failures++
			t.Errorf("README.md:%d: %s\nexited %d, want %d; it printed:\n%s", c.line, c.text, got, c.exit, printed[i])
		case !saysInOrder(printed[i], c.says):
			failures++
			t.Errorf("README.md:%d: %s\nprinted:\n%s\nwant, in order: %q", c.line, c.text, printed[i], c.says)
		}
	}
	for _, b := range blocks {
		if b.shown == "" {
			continue
		}
		var all strings.Builder
		for _, c := range b.commands {
			all.WriteString(printed[c.index])
		}
		if got, want := normalise(all.String()), normalise(b.shown); !containsLines(got, want) {
			t.Errorf("README.md:%d: the output shown is not what the block above it prints (both normalised); shown:\n%s\nprinted:\n%s",
				b.shownLine, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// readmeBlock is a ```sh block of the README, and the output shown after it.
type readmeBlock struct {
	commands  []*readmeCommand
	shown     string
	shownLine int
}

// readmeCommand is one command of a block, as bash reads it.
type readmeCommand struct {
	index int    // in the whole README
	line  int    // of README.md where it starts
	text  string // as written, comments included
	exit  int    // the exit code its comments say, or 0
	says  []string
}

var (
	exitComment = regexp.MustCompile(`\(exit (\d+)\)`)
	// A comment: # after a space or at the start of a line.
	comment = regexp.MustCompile(`(?:^|\s)#\s(.*)$`)
	hereDoc = regexp.MustCompile(`<<-?\s*'?([A-Za-z_]+)'?`)
)

// readmeBlocks reads the ```sh blocks of the README, but the Set-up's
// `make` commands, which the test does itself.
func readmeBlocks(t *testing.T, readme string) []*readmeBlock {
	t.Helper()
	lines := strings.Split(readme, "\n")
	var blocks []*readmeBlock
	index := 0
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```sh" {
			continue
		}
		start := i + 1
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		body := lines[start:i]
		if len(body) > 0 && strings.HasPrefix(body[0], "make ") {
			continue // make run, make test: the test does make run's part
		}
		b := &readmeBlock{}
		var c *readmeCommand
		var pending []string
		for j := 0; j < len(body); j++ {
			l := body[j]
			trimmed := strings.TrimSpace(l)
			if len(pending) == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
				if c != nil && trimmed != "" {
					c.comment(t, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
				}
				continue
			}
			pending = append(pending, l)
			if m := hereDoc.FindStringSubmatch(l); m != nil {
				for j++; j < len(body) && body[j] != m[1]; j++ {
					pending = append(pending, body[j])
				}
				pending = append(pending, m[1])
			}
			text := strings.Join(pending, "\n")
			if strings.HasSuffix(l, `\`) || !complete(t, text) {
				continue
			}
			c = &readmeCommand{index: index, line: start + 1 + j - len(pending) + 1, text: text}
			index++
			for _, pl := range pending {
				if m := comment.FindStringSubmatch(pl); m != nil {
					c.comment(t, m[1])
				}
			}
			b.commands = append(b.commands, c)
			pending = nil
		}
		if len(pending) > 0 {
			t.Fatalf("README.md:%d: the block ends inside a command:\n%s", start, strings.Join(pending, "\n"))
		}
		// Its output: an untagged block after it, past one empty line. One
		// right after it would be read as the next block's opening and its
		// output left unchecked: refuse that layout.
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README.md:%d: a block right after a sh block: leave one empty line before its output, so that the test checks it", i+2)
		}
		if i+2 < len(lines) && lines[i+1] == "" && lines[i+2] == "```" {
			k := i + 3
			for ; k < len(lines) && lines[k] != "```"; k++ {
			}
			b.shown, b.shownLine = strings.Join(lines[i+3:k], "\n"), i+3
			i = k
		}
		blocks = append(blocks, b)
	}
	if len(blocks) < 10 {
		t.Fatalf("README.md has %d sh blocks; the test expected more", len(blocks))
	}
	return blocks
}

// complete reports whether bash reads text as whole commands.
func complete(t *testing.T, text string) bool {
	out, err := exec.Command("bash", "-n", "-c", text).CombinedOutput()
	if err == nil {
		return true
	}
	if !strings.Contains(string(out), "unexpected end of file") {
		t.Fatalf("bash cannot read the README's\n%s\n%s", text, out)
	}
	return false
}

// comment reads what a comment on the command says: its exit code, and an
// error it quotes.
func (c *readmeCommand) comment(t *testing.T, text string) {
	m := exitComment.FindStringSubmatchIndex(text)
	if m == nil {
		return
	}
	code, _ := strconv.Atoi(text[m[2]:m[3]])
	c.exit = code
	quoted := text[:m[0]]
	if i := strings.Index(quoted, "ingot: "); i >= 0 {
		quoted = quoted[i:]
	} else if !strings.HasPrefix(quoted, "...") {
		return
	}
	for _, part := range strings.Split(quoted, "...") {
		if part = strings.TrimSpace(part); part != "" {
			c.says = append(c.says, part)
		}
	}
}

// splitRun splits the script's output at its markers: what each command
// printed, and its exit code.
func splitRun(t *testing.T, out string, n int) ([]string, []int) {
	t.Helper()
	printed, codes := make([]string, n), make([]int, n)
	marker := regexp.MustCompile(`(?m)^@@(begin|end) (\d+)(?: (\d+))?$`)
	ms := marker.FindAllStringSubmatchIndex(out, -1)
	seen := 0
	for k := 0; k+1 < len(ms); k += 2 {
		begin, end := ms[k], ms[k+1]
		i, _ := strconv.Atoi(out[begin[4]:begin[5]])
		if out[begin[2]:begin[3]] != "begin" || out[end[2]:end[3]] != "end" || out[end[4]:end[5]] != out[begin[4]:begin[5]] || i >= n {
			t.Fatalf("the README's run is out of step at %q", out[begin[0]:end[1]])
		}
		body := out[begin[1]:end[0]]
		body = strings.TrimPrefix(body, "\n")
		body = strings.TrimSuffix(body, "\n") // the marker's own
		printed[i] = body
		codes[i], _ = strconv.Atoi(out[end[6]:end[7]])
		seen++
	}
	if seen != n {
		t.Fatalf("the README's run stopped after %d of %d commands:\n%s", seen, n, out)
	}
	return printed, codes
}

// saysInOrder reports whether out holds each part, in order.
func saysInOrder(out string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(out, p)
		if i < 0 {
			return false
		}
		out = out[i+len(p):]
	}
	return true
}

var dateTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2}([ T])\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})?`)

// normalise is output as the test compares it (TestReadme).
func normalise(s string) []string {
	s = dateTime.ReplaceAllStringFunc(s, func(d string) string {
		pattern := "YYYY-MM-DD" + d[10:11] + "hh:mm:ss"
		return pattern + d[19:]
	})
	var lines []string
	for l := range strings.Lines(s) {
		lines = append(lines, strings.TrimRight(l, " \t\n"))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// containsLines reports whether want is a run of consecutive lines of got.
func containsLines(got, want []string) bool {
	for i := 0; i+len(want) <= len(got); i++ {
		match := true
		for j := range want {
			if got[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return len(want) == 0
}

// makeRun does what `make run` does, by the Makefile's recipe, in dir with
// LISTEN on a free port, and returns the URL it serves; the server stops
// at the test's end.
func makeRun(t *testing.T, bash, dir string, env []string) string {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(makefile), "\nrun: build\n")
	if !ok {
		t.Fatal("the Makefile has no run: build target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	recipe = strings.ReplaceAll(recipe, "\\\n", " ")
	expand := strings.NewReplacer("$(dir $(DB))", "var/", "$(DB)", "var/ingot.db", "$(LISTEN)", "127.0.0.1:0",
		"$(if $(shell command -v unmunge),--munge)", "--munge")
	var steps []string
	for l := range strings.Lines(recipe) {
		l = strings.TrimPrefix(strings.TrimSpace(l), "@")
		if strings.HasPrefix(l, "test -f") || strings.HasPrefix(l, "bin/ingot") {
			steps = append(steps, expand.Replace(l))
		}
	}
	if len(steps) != 2 || !strings.Contains(steps[1], " serve ") || strings.Contains(strings.Join(steps, ""), "$(") {
		t.Fatalf("the Makefile's run recipe is not an init and a serve the test can run: %q", steps)
	}
	init := exec.Command(bash, "-c", steps[0])
	init.Dir, init.Env = dir, env
	run(t, init)

	var stdout linebuf.Buffer
	serve := exec.Command(bash, "-c", "exec "+steps[1])
	serve.Dir, serve.Env, serve.Stdout = dir, env, &stdout
	serve.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { serve.Wait(); close(done) }()
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			serve.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if url, ok := stdout.Line("listening on "); ok {
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				return url
			}
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "var", "serve.log"))
			t.Fatalf("make run's server ended: %s\n%s", stdout.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run's server does not listen: %s", stdout.String())
		}
	}
}

// freePort is a TCP port of 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestReadmeSchemaRange checks what README.md and docs/storage.md say of
// the bank files an ingot upgrades against the schema it writes: schemas 2
// to the one before its own, its own in storage.md's table, newer ones
// refused. (The README said 2 to 8 once the bank was at 12.)
func TestReadmeSchemaRange(t *testing.T) {
	own := boltstore.SchemaVersion
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	if want := fmt.Sprintf("A bank made by an earlier ingot (schema 2 to %d) is upgraded in place", own-1); !strings.Contains(text, want) {
		t.Errorf("README.md does not say %q", want)
	}
	storage, err := os.ReadFile(filepath.Join(root, "docs", "storage.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("\n| %d | ", own), "| this ingot's own |",
		fmt.Sprintf("\n| %d | ", own-1),
		fmt.Sprintf("\n| %d or more | a newer ingot | refused", own+1),
		fmt.Sprintf("from schema 7 to %d;", own),
	} {
		if !strings.Contains(string(storage), want) {
			t.Errorf("docs/storage.md does not say %q (this ingot writes schema %d)", strings.TrimSpace(want), own)
		}
	}
}
