package contrib

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVersionScript: contrib/packaging/version.sh makes semantic versions
// of git's release tags, in the order dpkg gives them as the packages write
// them: before the first tag, on a tag, commits after it, with changes
// not committed, on a pre-release tag and after it; a tag that is not a
// release's (v2) is passed over.
func TestVersionScript(t *testing.T) {
	git := needTool(t, "git", "git")
	script, err := filepath.Abs(filepath.Join(root, "contrib", "packaging", "version.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sh := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.org", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.org")
		return strings.TrimSpace(run(t, cmd))
	}
	commit := func(msg string) string {
		sh(git, "commit", "-q", "--allow-empty", "-m", msg)
		return "g" + sh(git, "rev-parse", "--short=7", "HEAD")
	}
	sh(git, "init", "-q")
	var got []string
	want := func(pattern string) {
		t.Helper()
		v := sh(script)
		if v != pattern {
			t.Errorf("version.sh printed %q, want %q", v, pattern)
		}
		got = append(got, v)
	}
	c := commit("one")
	want("0.0.0-dev.1+" + c)
	c = commit("two")
	want("0.0.0-dev.2+" + c)
	sh(git, "tag", "v0.9.0")
	want("0.9.0")
	sh(git, "tag", "v2") // not a release tag
	commit("three")
	c = commit("four")
	want("0.9.1-dev.2+" + c)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(git, "add", "f")
	want("0.9.1-dev.2+" + c + ".dirty")
	sh(git, "commit", "-q", "-m", "f")
	sh(git, "tag", "v1.0.0-rc.1")
	want("1.0.0-rc.1")
	c = commit("five")
	want("1.0.0-rc.1.dev.1+" + c)
	sh(git, "tag", "v1.0.0")
	want("1.0.0")

	// dpkg orders them as the commits, once written as the .deb writes them.
	if dpkg, err := exec.LookPath("dpkg"); err == nil {
		for i := 1; i < len(got); i++ {
			a, b := debianVersion(got[i-1]), debianVersion(got[i])
			if exec.Command(dpkg, "--compare-versions", a, "lt", b).Run() != nil {
				t.Errorf("dpkg does not order %s before %s", a, b)
			}
		}
	}
}

// debianVersion is a semantic version as nfpm writes it in a .deb.
func debianVersion(semver string) string {
	v, meta, hasMeta := strings.Cut(semver, "+")
	v = strings.Replace(v, "-", "~", 1)
	if hasMeta {
		v += "+" + meta
	}
	return v + "-1"
}

// TestRelease makes a release as docs/operations.md says (git tag v0.9.0
// && make release) in a fresh clone of the tree as it is, one release
// tagged before it, and checks what it made: the static binaries of both
// architectures, stripped, printing the tag's version and the commit; the
// .deb, which lintian passes with no error, with its copyright file,
// changelog and documentation; the .rpm; the images; SHA256SUMS of them
// all. It builds everything a release has, for minutes on two cores, so it
// runs only under INGOT_E2E=1, with lintian, podman, dpkg and rpm.
func TestRelease(t *testing.T) {
	if !e2e() {
		t.Skip("builds a whole release, minutes of work: only under INGOT_E2E=1")
	}
	git := needTool(t, "git", "git")
	lintian := needTool(t, "lintian", "lintian")
	needTool(t, "dpkg-deb", "dpkg")
	rpm := needTool(t, "rpm", "rpm")
	podman := podmanCommand(t)

	// The clone: the tree's commits, then the tree as it is (tracked files
	// and new ones git does not ignore) as a commit of its own, tagged
	// v0.9.0; the commit before it is v0.8.0.
	clone := filepath.Join(t.TempDir(), "ingot")
	run(t, exec.Command(git, "clone", "-q", "--no-hardlinks", root, clone))
	files := run(t, exec.Command(git, "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"))
	for name := range strings.SplitSeq(strings.TrimSuffix(files, "\x00"), "\x00") {
		copyFile(t, filepath.Join(root, name), filepath.Join(clone, name))
	}
	gitIn := func(args ...string) string {
		cmd := exec.Command(git, append([]string{"-C", clone}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		return strings.TrimSpace(run(t, cmd))
	}
	gitIn("tag", "v0.8.0")
	gitIn("add", "-A")
	gitIn("commit", "-q", "--allow-empty", "-m", "The tree under test")
	gitIn("tag", "v0.9.0")
	head := gitIn("rev-parse", "HEAD")

	dist := t.TempDir()
	cmd := exec.Command("make", "-C", clone, "--no-print-directory", "release", "BUILDDIR="+t.TempDir(), "PKGDIR="+dist, "CONTAINER_TOOL="+podman.tool)
	out := run(t, cmd)
	if !strings.Contains(out, "ingot 0.9.0 in "+dist) {
		t.Errorf("make release said:\n%s", lastLines(out, 20))
	}

	want := []string{"SHA256SUMS", "ingot-0.9.0-linux-amd64", "ingot-0.9.0-linux-arm64", "ingot_0.9.0-1_" + debArch() + ".deb", "ingot-0.9.0-1." + rpmArch() + ".rpm",
		"ingot-0.9.0-image-linux-amd64.tar", "ingot-0.9.0-image-linux-arm64.tar"}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("make release made %q, want %q", got, want)
	}
	sums := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
	sums.Dir = dist
	if out := run(t, sums); strings.Count(out, ": OK\n") != len(want)-1 {
		t.Errorf("sha256sum -c SHA256SUMS:\n%s\nwant each of the %d files OK", out, len(want)-1)
	}

	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dist, "ingot-0.9.0-linux-"+arch)
		checkStripped(t, bin, arch, true)
		if arch == runtime.GOARCH {
			v := run(t, exec.Command(bin, "version"))
			if !strings.HasPrefix(v, "ingot 0.9.0\ncommit "+head+"\n") || !strings.Contains(v, "without cgo") {
				t.Errorf("%s version:\n%s\nwant 0.9.0, commit %s, static", bin, v, head)
			}
		}
		checkImageArchive(t, filepath.Join(dist, "ingot-0.9.0-image-linux-"+arch+".tar"), arch, "0.9.0")
	}

	// The .deb: lintian finds no error; its fields, documentation and
	// binary.
	deb := filepath.Join(dist, want[slices.IndexFunc(want, func(s string) bool { return strings.HasSuffix(s, ".deb") })])
	lint := exec.Command(lintian, "--fail-on", "error", "--display-level", ">=warning", deb)
	lintOut, err := lint.CombinedOutput()
	t.Logf("lintian %s:\n%s", filepath.Base(deb), lintOut)
	if err != nil || bytes.Contains(lintOut, []byte("\nE: ")) || bytes.HasPrefix(lintOut, []byte("E: ")) {
		t.Errorf("lintian %s: %v\n%s", deb, err, lintOut)
	}
	for field, want := range map[string]string{"Version": "0.9.0-1", "Maintainer": "<", "Architecture": debArch()} {
		if got := strings.TrimSpace(run(t, exec.Command("dpkg-deb", "-f", deb, field))); !strings.Contains(got, want) {
			t.Errorf("the .deb's %s: %q, want %q in it", field, got, want)
		}
	}
	tree := t.TempDir()
	run(t, exec.Command("dpkg-deb", "-x", deb, tree))
	checkStripped(t, filepath.Join(tree, "usr", "bin", "ingot"), runtime.GOARCH, false)
	copyright, err := os.ReadFile(filepath.Join(tree, "usr", "share", "doc", "ingot", "copyright"))
	if err != nil || !bytes.HasPrefix(copyright, []byte("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")) ||
		!bytes.Contains(copyright, []byte("\nFiles: go.etcd.io/bbolt/*\n")) {
		t.Errorf("the .deb's copyright file (%v):\n%.600s", err, copyright)
	}
	changelog := gunzip(t, filepath.Join(tree, "usr", "share", "doc", "ingot", "changelog.Debian.gz"))
	if !strings.HasPrefix(changelog, "ingot (0.9.0-1) unstable; urgency=medium\n\n  * The tree under test\n\n -- ") ||
		!strings.Contains(changelog, "\ningot (0.8.0-1) unstable; urgency=medium\n\n  * The first release (") {
		t.Errorf("the .deb's changelog:\n%s", changelog)
	}
	if readme := gunzip(t, filepath.Join(tree, "usr", "share", "doc", "ingot", "README.md.gz")); !strings.HasPrefix(readme, "# ingot\n") {
		t.Errorf("the .deb's README.md.gz:\n%.200s", readme)
	}

	if got := run(t, exec.Command(rpm, "-qp", "--queryformat", "%{VERSION}-%{RELEASE}", filepath.Join(dist, "ingot-0.9.0-1."+rpmArch()+".rpm"))); got != "0.9.0-1" {
		t.Errorf("the .rpm's version: %q, want 0.9.0-1", got)
	}
}

// checkStripped fails the test unless file is an ELF executable for arch
// with no symbol table and no DWARF, and, if static, no dynamic linking.
func checkStripped(t *testing.T, file, arch string, static bool) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("%s: machine %v, want %v", file, f.Machine, machine)
	}
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("%s has %s: not stripped", file, s.Name)
		}
	}
	if libs, _ := f.ImportedLibraries(); static && (len(libs) > 0 || slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })) {
		t.Errorf("%s is linked dynamically (%q), want it static", file, libs)
	}
	if info, err := os.Stat(file); err == nil {
		t.Logf("%s: %.1f MB", filepath.Base(file), float64(info.Size())/1e6)
	}
}

// TestContainerImage builds the container image with make image (podman,
// storage of its own), checks its configuration and files, then runs it as
// docs/operations.md does: the bank created on a named volume, the first
// admin's key, the server started, healthy by its HEALTHCHECK, audited on
// its local socket with podman exec, and stopped by podman stop.
func TestContainerImage(t *testing.T) {
	podman := podmanCommand(t)
	dist := t.TempDir()
	runMake(t, "image", "PKGDIR="+dist, "VERSION=0.9.0-test", "IMAGE_TAG=localhost/ingot:test", "CONTAINER_TOOL="+podman.tool)
	checkImageArchive(t, filepath.Join(dist, "ingot-0.9.0-test-image-linux-"+runtime.GOARCH+".tar"), runtime.GOARCH, "0.9.0-test")

	name := fmt.Sprintf("ingot-test-%d", os.Getpid())
	t.Cleanup(func() {
		podman.cmd("rm", "-f", "--time", "0", name).Run()
		podman.cmd("volume", "rm", "-f", name).Run()
	})
	port := loopbackPort(t)
	runIn := func(args ...string) string {
		t.Helper()
		return run(t, podman.cmd(append(append([]string{"run", "--rm"}, podman.runFlags...), append([]string{"-v", name + ":/var/lib/ingot", "localhost/ingot:test"}, args...)...)...))
	}
	run(t, podman.cmd("volume", "create", name))
	if out := runIn("init"); !strings.Contains(out, "created bank /var/lib/ingot/ingot.db") {
		t.Errorf("init in the image:\n%s", out)
	}
	if out := runIn("client", "add", "admin", "--role", "admin"); !strings.Contains(out, "admin.") {
		t.Errorf("client add in the image:\n%s", out)
	}
	run(t, podman.cmd(append(append([]string{"run", "-d", "--name", name}, podman.runFlags...),
		"-e", fmt.Sprintf("INGOT_LISTEN=127.0.0.1:%d", port), "-v", name+":/var/lib/ingot", "localhost/ingot:test")...))
	deadline := time.Now().Add(30 * time.Second)
	for podman.cmd("healthcheck", "run", name).Run() != nil {
		if time.Now().After(deadline) {
			logs, _ := podman.cmd("logs", name).CombinedOutput()
			t.Fatalf("the container is not healthy after 30 s:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ok"`) {
		t.Errorf("GET /healthz: %s %s", resp.Status, body)
	}
	if out := run(t, podman.cmd("exec", name, "ingot", "--server", "unix:/run/ingot/ingot.sock", "audit")); !strings.HasSuffix(out, "audit: OK\n") {
		t.Errorf("the audit through the socket, in the container:\n%s", out)
	}
	mount := strings.TrimSpace(run(t, podman.cmd("volume", "inspect", "--format", "{{.Mountpoint}}", name)))
	for _, f := range []string{"ingot.db", "server.key"} {
		wantOwned(t, filepath.Join(mount, f), 65532, 65532, 0o600)
	}
	wantOwned(t, mount, 65532, 65532, fs.ModeDir|0o750)

	run(t, podman.cmd("stop", "--time", "45", name))
	if code := strings.TrimSpace(run(t, podman.cmd("inspect", "--format", "{{.State.ExitCode}}", name))); code != "0" {
		logs, _ := podman.cmd("logs", name).CombinedOutput()
		t.Errorf("after podman stop, exit code %s, want 0:\n%s", code, logs)
	}
	if logs, _ := podman.cmd("logs", name).CombinedOutput(); !bytes.Contains(logs, []byte(`"msg":"stopped"`)) {
		t.Errorf("the server's log has no stop:\n%s", logs)
	}
}

// podman is podman with storage of the test's own, so that the host's
// images and containers are left alone.
type podman struct {
	t    *testing.T
	argv []string // podman and its global flags
	tool string   // the same, as make's CONTAINER_TOOL
	// runFlags are those of each podman run: the host's network (no
	// bridge to set up), and limits within any host's. podman's default
	// for root is a million open files, more than some sandboxes let a
	// container have; and Debian 12's crun refuses hosts whose cgroups are
	// in hybrid mode (v1 controllers, an empty v2 tree), where runc, with
	// podman's own cgroupfs manager, runs.
	runFlags []string
}

func podmanCommand(t *testing.T) *podman {
	t.Helper()
	path := needTool(t, "podman", "podman")
	dir, err := os.MkdirTemp("", "ingot-podman-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &podman{t: t, argv: []string{path, "--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "vfs"}}
	if runc, err := exec.LookPath("runc"); err == nil {
		p.argv = append(p.argv, "--runtime", runc, "--cgroup-manager", "cgroupfs")
	}
	p.tool = strings.Join(p.argv, " ")
	p.runFlags = []string{"--network", "host", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}
	return p
}

func (p *podman) cmd(args ...string) *exec.Cmd {
	return exec.Command(p.argv[0], append(p.argv[1:], args...)...)
}

// imageConfig is what the test reads of an image's configuration
// (Docker's format, which podman save writes).
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User        string              `json:"User"`
		Env         []string            `json:"Env"`
		Entrypoint  []string            `json:"Entrypoint"`
		Cmd         []string            `json:"Cmd"`
		Volumes     map[string]struct{} `json:"Volumes"`
		WorkingDir  string              `json:"WorkingDir"`
		StopSignal  string              `json:"StopSignal"`
		Labels      map[string]string   `json:"Labels"`
		Healthcheck struct {
			Test []string `json:"Test"`
		} `json:"Healthcheck"`
	} `json:"config"`
}

// checkImageArchive reads an image saved by make image (docker-archive)
// and checks its configuration and files.
func checkImageArchive(t *testing.T, archive, arch, version string) {
	t.Helper()
	blobs := readTar(t, archive)
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(blobs["manifest.json"].body, &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("%s: manifest.json: %v %s", archive, err, blobs["manifest.json"].body)
	}
	var cfg imageConfig
	if err := json.Unmarshal(blobs[manifest[0].Config].body, &cfg); err != nil {
		t.Fatalf("%s: the image's configuration: %v", archive, err)
	}
	c := cfg.Config
	if cfg.Architecture != arch || cfg.OS != "linux" || c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/bin/ingot"}) ||
		!slices.Equal(c.Cmd, []string{"serve"}) || !slices.Equal(slices.Sorted(maps.Keys(c.Volumes)), []string{"/var/lib/ingot"}) || c.StopSignal != "SIGTERM" ||
		!slices.Equal(c.Healthcheck.Test, []string{"CMD", "/usr/bin/ingot", "healthcheck"}) || c.Labels["org.opencontainers.image.version"] != version {
		t.Errorf("%s: the image's configuration: %+v", archive, cfg)
	}
	for _, env := range []string{"INGOT_DB=/var/lib/ingot/ingot.db", "INGOT_LISTEN=0.0.0.0:8080", "INGOT_SOCKET=/run/ingot/ingot.sock"} {
		if !slices.Contains(c.Env, env) {
			t.Errorf("%s: the image's environment %q lacks %s", archive, c.Env, env)
		}
	}

	// The files, the layers applied in order.
	files := map[string]tarFile{}
	for _, layer := range manifest[0].Layers {
		for name, f := range readTar(t, "a layer", blobs[layer].body) {
			files[strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")] = f
		}
	}
	for name, want := range map[string]struct {
		uid  int
		mode fs.FileMode
	}{
		"usr/bin/ingot": {0, 0o755}, "etc/passwd": {0, 0o644}, "etc/group": {0, 0o644},
		"var": {0, fs.ModeDir | 0o755}, "var/lib": {0, fs.ModeDir | 0o755}, "var/lib/ingot": {65532, fs.ModeDir | 0o750},
		"run": {0, fs.ModeDir | 0o755}, "run/ingot": {65532, fs.ModeDir | 0o755}, "tmp": {0, fs.ModeDir | fs.ModeSticky | 0o777},
	} {
		f, ok := files[name]
		if !ok {
			t.Errorf("%s: no /%s in the image", archive, name)
		} else if f.hdr.Uid != want.uid || f.hdr.Gid != want.uid || f.hdr.FileInfo().Mode() != want.mode {
			t.Errorf("%s: /%s is %d:%d %v, want %d:%d %v", archive, name, f.hdr.Uid, f.hdr.Gid, f.hdr.FileInfo().Mode(), want.uid, want.uid, want.mode)
		}
	}
	if passwd := string(files["etc/passwd"].body); !strings.Contains(passwd, "\ningot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd has no user ingot 65532:\n%s", archive, passwd)
	}
	var names []string
	for name, f := range files {
		if f.hdr.Typeflag == tar.TypeReg {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"etc/group", "etc/passwd", "usr/bin/ingot"}) {
		t.Errorf("%s: the image's files are %q, want ingot, passwd and group alone", archive, names)
	}
	bin := filepath.Join(t.TempDir(), "ingot")
	if err := os.WriteFile(bin, files["usr/bin/ingot"].body, 0o755); err != nil {
		t.Fatal(err)
	}
	checkStripped(t, bin, arch, true)
}

type tarFile struct {
	hdr  *tar.Header
	body []byte
}

// readTar returns the entries of a tar file (or of data, if given), gzip
// compressed or not.
func readTar(t *testing.T, file string, data ...[]byte) map[string]tarFile {
	t.Helper()
	var r io.Reader
	if len(data) > 0 {
		r = bytes.NewReader(data[0])
	} else {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	} else {
		r = br
	}
	out := map[string]tarFile{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = tarFile{hdr, body}
	}
}

func gunzip(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	b, err := io.ReadAll(gz)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return string(b)
}

// copyFile copies a file, or a symbolic link, with its mode.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	info, err := os.Lstat(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(to)
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err == nil {
			err = os.Symlink(target, to)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, info.Mode().Perm())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// loopbackPort is a port of 127.0.0.1 free now.
func loopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func debArch() string { return runtime.GOARCH }

func rpmArch() string {
	return map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
