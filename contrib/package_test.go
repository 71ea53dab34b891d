package contrib

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/linebuf"
)

// hostPaths are where an installed ingot keeps its state: the test
// installs the .deb only on a host without them, and removes them after.
var hostPaths = []string{"/etc/ingot", "/var/lib/ingot", "/run/ingot"}

// TestPackages runs make package and checks the .rpm's files, modes,
// config file, scripts and dependencies against the .deb's, then installs
// the .deb with dpkg -i: the user ingot and /var/lib/ingot are made, the
// files are where docs/operations.md says, systemd-analyze accepts the
// units in place, ingot version runs, the first start of the documentation
// works as written with the server run as ingot.service runs it, and so
// does the unit's backup; dpkg --purge leaves the bank, its key and its
// copies, and the user.
//
// It installs system-wide (dpkg --root would run the package's scripts in
// a tree with no systemd-sysusers to run), so it runs only under
// INGOT_E2E=1, as root, on a host with no ingot, and removes what it made.
func TestPackages(t *testing.T) {
	if !e2e() {
		t.Skip("installs ingot system-wide: only under INGOT_E2E=1")
	}
	if os.Geteuid() != 0 {
		t.Fatal("under INGOT_E2E=1 the package test installs the .deb, which needs root")
	}
	needTool(t, "dpkg", "dpkg")
	needTool(t, "systemd-sysusers", "systemd")
	rpm := needTool(t, "rpm", "rpm")
	if err := exec.Command("dpkg-query", "-W", "ingot").Run(); err == nil {
		t.Fatal("the package ingot is installed on this host: the test would replace it")
	}
	if _, err := user.Lookup("ingot"); err == nil {
		t.Fatal("this host has a user ingot: the test would remove it")
	}
	for _, path := range hostPaths {
		if _, err := os.Lstat(path); err == nil {
			t.Fatalf("this host has %s: the test would remove it", path)
		}
	}

	dir := t.TempDir()
	runMake(t, "package", "PKGDIR="+dir)
	deb, rpmFile := onlyFile(t, dir, "*.deb"), onlyFile(t, dir, "*.rpm")

	t.Run("rpm", func(t *testing.T) {
		got := map[string]fs.FileMode{}
		for line := range strings.Lines(run(t, exec.Command(rpm, "-qp", "--queryformat", "[%{FILEMODES:octal} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]", rpmFile))) {
			f := strings.Fields(line)
			mode, err := strconv.ParseUint(f[0], 8, 32)
			if err != nil || len(f) != 3 {
				t.Fatalf("rpm -qp: %q", line)
			}
			if f[1] != "root:root" {
				t.Errorf("%s is %s's, want root's", f[2], f[1])
			}
			if mode&syscall.S_IFMT == syscall.S_IFREG {
				got[f[2]] = fs.FileMode(mode & 0o777)
			} else if !slices.Contains([]string{"/etc/ingot", "/usr/libexec/ingot", "/usr/share/doc/ingot", "/usr/share/doc/ingot/docs", "/usr/share/licenses/ingot"}, f[2]) {
				t.Errorf("%s: mode %o; the package owns no directory but its own", f[2], mode)
			}
		}
		sameFiles(t, "the .rpm", got, packaged("rpm"))
		if got := run(t, exec.Command(rpm, "-qpc", rpmFile)); got != "/etc/ingot/ingot.toml\n" {
			t.Errorf("the .rpm's config files: %q, want /etc/ingot/ingot.toml", got)
		}
		scripts := run(t, exec.Command(rpm, "-qp", "--scripts", rpmFile))
		for _, s := range []string{"postinstall", "preremove", "postremove"} {
			body, err := os.ReadFile(filepath.Join(root, "contrib", "packaging", s+".sh"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(scripts, string(body)) {
				t.Errorf("the .rpm lacks contrib/packaging/%s.sh; its scripts:\n%s", s, scripts)
			}
		}
		requires := run(t, exec.Command(rpm, "-qpR", rpmFile))
		for _, want := range []string{"glibc >= " + declaredGlibc(t), "systemd"} {
			if !slices.Contains(strings.Split(requires, "\n"), want) {
				t.Errorf("the .rpm requires:\n%s\nwant %s", requires, want)
			}
		}
	})

	t.Run("deb", func(t *testing.T) {
		got := map[string]fs.FileMode{}
		for line := range strings.Lines(run(t, exec.Command("dpkg-deb", "-c", deb))) {
			f := strings.Fields(line)
			if len(f) != 6 || f[1] != "root/root" {
				t.Errorf("dpkg-deb -c: %q, want a file of root/root", line)
				continue
			}
			if f[0][0] == '-' {
				got[strings.TrimPrefix(f[5], ".")] = fileMode(t, f[0])
			}
		}
		sameFiles(t, "the .deb", got, packaged("deb"))
		depends := strings.TrimSpace(run(t, exec.Command("dpkg-deb", "-f", deb, "Depends")))
		if want := "libc6 (>= " + declaredGlibc(t) + "), systemd"; depends != want {
			t.Errorf("the .deb depends on %q, want %q", depends, want)
		}

		t.Cleanup(func() {
			// Only what the test made: the host had none of it.
			for _, cmd := range [][]string{{"dpkg", "--purge", "ingot"}, {"userdel", "ingot"}, {"groupdel", "ingot"}} {
				exec.Command(cmd[0], cmd[1:]...).Run() // an error only says it is gone already
			}
			for _, path := range hostPaths {
				os.RemoveAll(path)
			}
		})
		run(t, exec.Command("dpkg", "-i", deb))
		installedDeb(t, deb)
	})
}

// installedDeb checks the .deb as dpkg -i installed it, then purges it.
func installedDeb(t *testing.T, deb string) {
	account, err := user.Lookup("ingot")
	if err != nil {
		t.Fatalf("no user ingot after dpkg -i: %v", err)
	}
	uid, _ := strconv.Atoi(account.Uid)
	gid, _ := strconv.Atoi(account.Gid)
	if group, err := user.LookupGroupId(account.Gid); err != nil || group.Name != "ingot" || uid >= 1000 || account.HomeDir != "/var/lib/ingot" {
		t.Errorf("user ingot: uid %d, group %v (%v), home %s; want a system user (uid below 1000) of group ingot, at home in /var/lib/ingot", uid, group, err, account.HomeDir)
	}
	wantOwned(t, "/var/lib/ingot", uid, gid, fs.ModeDir|0o750)
	for path, mode := range packaged("deb") {
		if info, err := os.Stat(path); err != nil || info.Mode() != mode {
			t.Errorf("%s after dpkg -i: %v, want mode %v", path, err, mode)
		}
	}
	if got := run(t, exec.Command("dpkg-query", "-W", "-f", "${Conffiles}", "ingot")); !strings.Contains(got, "/etc/ingot/ingot.toml ") {
		t.Errorf("the conffiles of ingot: %q, want /etc/ingot/ingot.toml", got)
	}
	verifyUnits(t, "/usr/lib/systemd/system", "/usr/share/man")
	checkGlibc(t, "/usr/bin/ingot")

	// ingot version prints the package's version as the semantic version
	// it is (0.9.1~dev.3+g1a2b3c4-1 is 0.9.1-dev.3+g1a2b3c4), and the
	// commit it names, if it names one (not on a tag).
	pkgVersion := strings.TrimSpace(run(t, exec.Command("dpkg-deb", "-f", deb, "Version")))
	semver := strings.Replace(strings.TrimSuffix(pkgVersion, "-1"), "~", "-", 1)
	version := run(t, exec.Command("/usr/bin/ingot", "version"))
	if !strings.HasPrefix(version, "ingot "+semver+"\n") {
		t.Errorf("ingot version:\n%s\nwant the package's version %s, as ingot %s", version, pkgVersion, semver)
	}
	if commit := regexp.MustCompile(`\+g([0-9a-f]{7,})(\.dirty)?-1$`).FindStringSubmatch(pkgVersion); commit != nil && !strings.Contains(version, "\ncommit "+commit[1]) {
		t.Errorf("ingot version:\n%s\nwant the commit of the package's version %s", version, pkgVersion)
	}

	// The first start, as the documentation has it; the server runs as
	// the user ingot, in the /run/ingot that RuntimeDirectory= makes, on
	// free ports rather than the config's.
	ingotUser := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	srv := &service{t: t, user: ingotUser, log: filepath.Join(t.TempDir(), "serve.log"),
		argv: []string{"/usr/bin/ingot", "serve", "--config", "/etc/ingot/ingot.toml", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}}
	systemctl := func(args []string) {
		if err := os.Mkdir("/run/ingot", 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
		if err := os.Chown("/run/ingot", uid, gid); err != nil {
			t.Fatal(err)
		}
		srv.systemctl(args)
	}
	home := t.TempDir()
	shell := &docShell{t: t, dir: "/", env: operatorEnv(home), rewrite: strings.NewReplacer(), systemctl: systemctl}
	if out := shell.run(docBlock(t, "First start")); !strings.HasSuffix(out, "audit: OK\n") {
		t.Fatalf("the first start did not end with audit: OK:\n%s", out)
	}
	wantOwned(t, "/var/lib/ingot/ingot.db", uid, gid, 0o600)
	wantOwned(t, "/var/lib/ingot/server.key", uid, gid, 0o600)
	wantOwned(t, filepath.Join(home, "ingot-admin.key"), 0, 0, 0o600)

	// The backup as ingot-backup.service runs it: as ingot, with the
	// unit's environment and systemd's PATH, into the directory its
	// StateDirectory= makes.
	if err := os.Mkdir("/var/lib/ingot/backups", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown("/var/lib/ingot/backups", uid, gid); err != nil {
		t.Fatal(err)
	}
	exe, env := unitCommand(t, "/usr/lib/systemd/system/ingot-backup.service", strings.NewReplacer())
	backup := exec.Command(exe)
	backup.Dir, backup.Env = "/", append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	backup.SysProcAttr = &syscall.SysProcAttr{Credential: ingotUser}
	out := run(t, backup)
	copies, _ := filepath.Glob("/var/lib/ingot/backups/ingot-*.db")
	if len(copies) != 1 || !strings.Contains(out, "audit OK") {
		t.Fatalf("the backup printed:\n%s\nand made %v; want one copy, audited", out, copies)
	}
	wantOwned(t, copies[0], uid, gid, 0o600)
	srv.systemctl([]string{"stop", "ingot.service"})
	byHand(t)

	purge := run(t, exec.Command("dpkg", "--purge", "ingot"))
	for _, gone := range []string{"/usr/bin/ingot", "/etc/ingot/ingot.toml", "/usr/lib/systemd/system/ingot.service"} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after dpkg --purge: %v", gone, err)
		}
	}
	for _, kept := range []string{"/var/lib/ingot/ingot.db", "/var/lib/ingot/server.key", copies[0]} {
		wantOwned(t, kept, uid, gid, 0o600)
	}
	if _, err := user.Lookup("ingot"); err != nil || !strings.Contains(purge, "are kept") {
		t.Errorf("after dpkg --purge: user ingot: %v; dpkg said:\n%s\nwant the user kept, and said so", err, purge)
	}
}

// byHand runs the server as docs/operations.md says to without systemd,
// with the shell loop as written (on a free port rather than the
// config's): it serves, on its socket too, and SIGTERM to the server ends
// the loop.
func byHand(t *testing.T) {
	t.Helper()
	var loop string
	for _, block := range docBlocks(t, "### With another service manager, or none") {
		if strings.Contains(block, "while :") {
			loop = block
		}
	}
	if loop == "" {
		t.Fatal("docs/operations.md, With another service manager, or none: no loop")
	}
	port := loopbackPort(t)
	const serve = "ingot serve --config /etc/ingot/ingot.toml"
	if !strings.Contains(loop, serve) {
		t.Fatalf("the loop of docs/operations.md runs no %q:\n%s", serve, loop)
	}
	loop = strings.Replace(loop, serve, serve+fmt.Sprintf(" --listen 127.0.0.1:%d --metrics-listen 127.0.0.1:0", port), 1)
	var out linebuf.Buffer
	sh := exec.Command("sh", "-ec", loop)
	sh.Dir, sh.Env = "/", operatorEnv(t.TempDir())
	sh.Stdout, sh.Stderr = &out, &out
	sh.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sh.Wait() }()
	t.Cleanup(func() {
		for _, pid := range descendants(sh.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		sh.Process.Kill()
		<-done
	})
	healthy := exec.Command("/usr/bin/ingot", "healthcheck", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	for deadline := time.Now().Add(20 * time.Second); healthy.Run() != nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server started by hand does not answer after 20 s:\n%s", out.String())
		}
		healthy = exec.Command(healthy.Args[0], healthy.Args[1:]...)
	}
	if got := run(t, exec.Command("/usr/bin/ingot", "--server", "unix:/run/ingot/ingot.sock", "audit")); !strings.HasSuffix(got, "audit: OK\n") {
		t.Errorf("the audit through the socket of the server started by hand:\n%s", got)
	}
	var servers []int
	for _, pid := range descendants(sh.Process.Pid) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); string(comm) == "ingot\n" {
			servers = append(servers, pid)
		}
	}
	if len(servers) != 1 {
		t.Fatalf("the loop runs %d ingot processes (%v), want one", len(servers), servers)
	}
	if err := syscall.Kill(servers[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil || !strings.Contains(out.String(), `"msg":"stopped"`) {
			t.Errorf("the loop ended with %v after SIGTERM to the server; want it ended, the server stopped:\n%s", err, out.String())
		}
	case <-time.After(45 * time.Second):
		t.Errorf("the loop goes on 45 s after SIGTERM to the server:\n%s", out.String())
	}
}

// docBlocks returns the sh blocks of the section of docs/operations.md
// whose heading line is heading ("### Name"), up to the next heading.
func docBlocks(t *testing.T, heading string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/operations.md has no section %q", heading)
	}
	if i := regexp.MustCompile(`\n#{2,3} `).FindStringIndex(section); i != nil {
		section = section[:i[0]]
	}
	var blocks []string
	for {
		var block string
		if _, section, ok = strings.Cut(section, "\n```sh\n"); !ok {
			return blocks
		}
		block, section, _ = strings.Cut(section, "\n```\n")
		blocks = append(blocks, block)
	}
}

// descendants are the processes whose parent, or its parent..., is pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				parent[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// wantOwned fails the test unless path exists with that owner and mode.
func wantOwned(t *testing.T, path string, uid, gid int, mode fs.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	st := info.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid || info.Mode() != mode {
		t.Errorf("%s: owner %d:%d, mode %v; want %d:%d, %v", path, st.Uid, st.Gid, info.Mode(), uid, gid, mode)
	}
}

// onlyFile returns the one file of dir that matches pattern.
func onlyFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) != 1 {
		t.Fatalf("make package made %v (%v) as %s, want one", files, err, pattern)
	}
	return files[0]
}

// fileMode parses the permissions of ls -l (rwxr-xr-x after the type).
func fileMode(t *testing.T, perms string) fs.FileMode {
	t.Helper()
	var mode fs.FileMode
	for i, c := range perms[1:] {
		if c != '-' {
			mode |= 1 << (8 - i)
		}
	}
	if len(perms) != 10 || mode.String() != "-"+perms[1:] {
		t.Fatalf("permissions %q", perms)
	}
	return mode
}

// declaredGlibc is the least version of the C library that nfpm.yaml
// declares, the same for the .deb and the .rpm.
func declaredGlibc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "contrib", "packaging", "nfpm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deb := regexp.MustCompile(`- libc6 \(>= ([0-9.]+)\)\n`).FindSubmatch(b)
	rpm := regexp.MustCompile(`- glibc >= ([0-9.]+)\n`).FindSubmatch(b)
	if deb == nil || rpm == nil || string(deb[1]) != string(rpm[1]) {
		t.Fatalf("nfpm.yaml declares libc6 %q and glibc %q, want one version for both", deb, rpm)
	}
	return string(deb[1])
}

// checkGlibc fails the test if the binary needs a C library newer than
// the packages declare: the newest GLIBC_ symbol version it imports.
func checkGlibc(t *testing.T, binary string) {
	t.Helper()
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	symbols, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	declared := versionParts(declaredGlibc(t))
	for _, s := range symbols {
		v, ok := strings.CutPrefix(s.Version, "GLIBC_")
		if ok && slices.Compare(versionParts(v), declared) > 0 {
			t.Errorf("%s imports %s@%s, newer than the glibc %s the packages declare", binary, s.Name, s.Version, declaredGlibc(t))
		}
	}
}

func versionParts(v string) []int {
	var parts []int
	for p := range strings.SplitSeq(v, ".") {
		n, _ := strconv.Atoi(p)
		parts = append(parts, n)
	}
	return parts
}
