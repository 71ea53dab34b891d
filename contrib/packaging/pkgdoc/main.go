// Command pkgdoc writes the copyright files and the changelog that make
// package puts in the .deb and the .rpm, from the repository and the binary
// packaged:
//
//   - copyright, in Debian's machine-readable format
//     (https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/):
//     ingot's licence (its LICENSE or COPYING file; the repository has none
//     yet, and the file says so rather than invent one), then each Go module
//     compiled into the binary (read from the binary's own build
//     information) and the Go standard library, each with its licence text
//     as the module ships it: Go links them all into one file, whose
//     copies must carry their notices. The licences are named by their SPDX
//     identifiers, as github.com/google/licensecheck recognises them. The
//     .deb's (/usr/share/doc/ingot/copyright) refers to the texts that every
//     Debian system has in /usr/share/common-licenses (Apache-2.0) rather than
//     copy them, as Debian's policy asks; the .rpm's
//     (/usr/share/licenses/ingot/copyright) has every text.
//   - changelog.Debian.gz: an entry for each release tag vX.Y.Z reachable
//     from the commit, listing the subjects of the commits since the tag
//     before it (the first release says so instead of listing the whole
//     history), and, for a version that is not a tag's, an entry for it
//     with the commits since the last tag. Versions are written as the
//     .deb's: the pre-release after '~', and nfpm's revision -1.
//
// Usage (from contrib/packaging, as the Makefile runs it):
//
//	go run ./pkgdoc -repo DIR -binary FILE -version VERSION -maintainer 'NAME <ADDRESS>' \
//	  -copyright FILE -copyright-full FILE -changelog FILE
package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/licensecheck"
)

func main() {
	repo := flag.String("repo", "", "the git work tree of ingot")
	binary := flag.String("binary", "", "the ingot binary packaged")
	version := flag.String("version", "", "the semantic version packaged (contrib/packaging/version.sh)")
	maintainer := flag.String("maintainer", "", "the packages' maintainer, NAME <ADDRESS>")
	copyright := flag.String("copyright", "", "the `FILE` to write the .deb's copyright file to")
	full := flag.String("copyright-full", "", "the `FILE` to write the copyright file with every licence text to")
	changelog := flag.String("changelog", "", "the `FILE` to write changelog.Debian.gz to")
	flag.Parse()
	if *repo == "" || *binary == "" || *version == "" || *maintainer == "" || *copyright == "" || *full == "" || *changelog == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*repo, *binary, *version, *maintainer, *copyright, *full, *changelog); err != nil {
		fmt.Fprintln(os.Stderr, "pkgdoc:", err)
		os.Exit(1)
	}
}

func run(repo, binary, version, maintainer, copyright, full, changelog string) error {
	if !regexp.MustCompile(`^[^<>]+ <[^<>@ ]+@[^<>@ ]+>$`).MatchString(maintainer) {
		return fmt.Errorf("maintainer %q: want NAME <ADDRESS>", maintainer)
	}
	for file, debian := range map[string]bool{copyright: true, full: false} {
		text, err := copyrightFile(repo, binary, maintainer, debian)
		if err != nil {
			return err
		}
		if err := writeFile(file, []byte(text)); err != nil {
			return err
		}
	}
	log, err := changelogFile(repo, version, maintainer)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // no name, no time: the same bytes for the same log
	w.Write([]byte(log))
	if err := w.Close(); err != nil {
		return err
	}
	return writeFile(changelog, gz.Bytes())
}

func writeFile(name string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// git runs git in the repository and returns its output.
func git(repo string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(b), nil
}

// copyrightFile is a copyright file: Debian's, or with every text.
func copyrightFile(repo, binary, maintainer string, debian bool) (string, error) {
	var b strings.Builder
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	b.WriteString("Upstream-Name: ingot\n")
	fmt.Fprintf(&b, "Upstream-Contact: %s\n", maintainer)
	b.WriteString("Source: https://github.com/ingot-hpc/ingot\n")
	b.WriteString(prose("Comment", "", "/usr/bin/ingot is built from ingot's source and the Go modules and standard library "+
		"named below, which Go compiles into the one file; each paragraph names a module, its version and "+
		"its licence, whose text follows as the module ships it."))

	// ingot's own licence.
	holders, err := gitHolders(repo)
	if err != nil {
		return "", err
	}
	b.WriteString("\nFiles: *\n")
	if text, name, err := licenceFile(repo); err != nil {
		return "", err
	} else if text != "" {
		if notices := notices(text); notices != "" {
			holders = notices
		}
		b.WriteString(field("Copyright", holders))
		b.WriteString(licence(text, "ingot's "+name, "", debian))
	} else {
		b.WriteString(field("Copyright", holders))
		b.WriteString(prose("License", "none", "The ingot repository has no LICENSE or COPYING file and states no licence: "+
			"none is granted here. Until its authors choose one, ask them before copying or redistributing ingot."))
	}

	// What Go compiled into the binary.
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "", err
	}
	var mods []string
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		mods = append(mods, dep.Path+"@"+dep.Version)
	}
	dirs, err := moduleDirs(repo, mods)
	if err != nil {
		return "", err
	}
	for _, mod := range mods {
		text, name, err := licenceFile(dirs[mod])
		if err != nil {
			return "", err
		}
		if text == "" {
			return "", fmt.Errorf("the module %s, compiled into %s, has no licence file in %s", mod, binary, dirs[mod])
		}
		// Apache-2.0's section 4(d): a NOTICE file goes with the copies.
		notice, err := os.ReadFile(filepath.Join(dirs[mod], "NOTICE"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		path, version, _ := strings.Cut(mod, "@")
		fmt.Fprintf(&b, "\nFiles: %s/*\n", path)
		b.WriteString(field("Copyright", notices(string(notice)+"\n"+text, "the authors of "+path)))
		b.WriteString(licence(text, path+"'s "+name, string(notice), debian))
		b.WriteString(prose("Comment", "", fmt.Sprintf("The Go module %s %s, compiled into /usr/bin/ingot.", path, version)))
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %v", err)
	}
	text, name, err := licenceFile(strings.TrimSpace(string(goroot)))
	if err != nil || text == "" {
		return "", fmt.Errorf("the Go distribution's licence: %v", err)
	}
	b.WriteString("\nFiles: go/src/*\n")
	b.WriteString(field("Copyright", notices(text, "The Go Authors")))
	b.WriteString(licence(text, "Go's "+name, "", debian))
	b.WriteString(prose("Comment", "", fmt.Sprintf("The Go standard library and runtime of %s, compiled into /usr/bin/ingot.", info.GoVersion)))
	return b.String(), nil
}

// gitHolders is the years and the authors of the repository's commits:
// "2025-2026 A, B".
func gitHolders(repo string) (string, error) {
	log, err := git(repo, "log", "--format=%ad %an", "--date=format:%Y")
	if err != nil {
		return "", err
	}
	var years []int
	var authors []string
	for line := range strings.Lines(log) {
		year, author, _ := strings.Cut(strings.TrimSpace(line), " ")
		y, err := strconv.Atoi(year)
		if err != nil {
			return "", fmt.Errorf("git log: %q", line)
		}
		years = append(years, y)
		if !slices.Contains(authors, author) {
			authors = append(authors, author)
		}
	}
	if len(years) == 0 {
		return "", errors.New("git log: no commits")
	}
	slices.Sort(authors)
	span := strconv.Itoa(slices.Min(years))
	if last := slices.Max(years); last != slices.Min(years) {
		span += "-" + strconv.Itoa(last)
	}
	return span + " " + strings.Join(authors, ", "), nil
}

// licenceFile returns the text of the licence files of a directory
// (LICENSE, LICENCE, COPYING, with or without an extension; all of them,
// one after the other, where there are several) and their names.
func licenceFile(dir string) (text, name string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", err
	}
	isLicence := regexp.MustCompile(`(?i)^(licen[cs]e|copying)([-._][-._a-z0-9]*)?$`)
	var texts, names []string
	for _, e := range entries {
		if e.Type().IsRegular() && isLicence.MatchString(e.Name()) {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return "", "", err
			}
			texts, names = append(texts, strings.TrimSpace(strings.ReplaceAll(string(b), "\r\n", "\n"))), append(names, e.Name())
		}
	}
	return strings.Join(texts, "\n\n"), strings.Join(names, " and "), nil
}

// notices returns the copyright lines of a licence text, one a line, else
// the fallback given.
func notices(text string, fallback ...string) string {
	var lines []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimLeft(line, "/#*>"))
		if m, _ := regexp.MatchString(`^(?i)copyright\b.*\b(1[89]|20)[0-9]{2}\b`, line); m && !strings.Contains(line, "yyyy") && !slices.Contains(lines, line) {
			lines = append(lines, strings.TrimSpace(line[len("copyright"):]))
		}
	}
	if len(lines) == 0 {
		return strings.Join(fallback, "")
	}
	for i, l := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l, ":"), "(c)"))
		lines[i] = strings.TrimSpace(strings.TrimPrefix(lines[i], "(C)"))
		lines[i] = strings.TrimSpace(strings.TrimPrefix(lines[i], "©"))
	}
	return strings.Join(lines, "\n")
}

// commonLicenses are the texts every Debian system has (base-files), by
// their SPDX identifiers, which lintian wants a copyright file to refer to
// rather than copy.
var commonLicenses = map[string]string{
	"Apache-2.0": "/usr/share/common-licenses/Apache-2.0",
	"MPL-2.0":    "/usr/share/common-licenses/MPL-2.0",
	"GPL-2.0":    "/usr/share/common-licenses/GPL-2",
	"GPL-3.0":    "/usr/share/common-licenses/GPL-3",
	"LGPL-2.1":   "/usr/share/common-licenses/LGPL-2.1",
	"LGPL-3.0":   "/usr/share/common-licenses/LGPL-3",
}

// licence is the License field of a licence text: the SPDX identifiers
// licensecheck finds in it (joined with "and": each applies), then the
// text itself, and the module's NOTICE file after it, if it has one. In
// Debian's copyright file, the text of a licence of commonLicenses is
// replaced by where it is.
func licence(text, what, notice string, debian bool) string {
	cov := licensecheck.Scan([]byte(text))
	if debian {
		for _, m := range slices.Backward(cov.Match) {
			if path, ok := commonLicenses[m.ID]; ok {
				text = text[:m.Start] + fmt.Sprintf("On Debian systems, the complete text of %s is in %s.", m.ID, path) + text[m.End:]
			}
		}
	}
	var ids []string
	for _, m := range cov.Match {
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	name := strings.Join(ids, " and ")
	if len(ids) == 0 || cov.Percent < 75 {
		// Not one licensecheck knows: it is named for whose it is, and
		// its text says what it is.
		name = "custom-" + regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(strings.TrimSuffix(what, "'s "+lastWord(what)), "-")
	}
	if notice = strings.TrimSpace(notice); notice != "" {
		text += "\n\nNOTICE:\n\n" + notice
	}
	return field("License", name+"\n"+text)
}

func lastWord(s string) string {
	f := strings.Fields(s)
	return f[len(f)-1]
}

// moduleDirs returns the directory of each module (path@version) in Go's
// module cache, downloading those that are not there yet.
func moduleDirs(repo string, mods []string) (map[string]string, error) {
	dirs := map[string]string{}
	if len(mods) == 0 {
		return dirs, nil
	}
	cmd := exec.Command("go", append([]string{"mod", "download", "-json"}, mods...)...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download: %v: %s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m struct{ Path, Version, Dir, Error string }
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		if m.Error != "" || m.Dir == "" {
			return nil, fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, m.Error)
		}
		dirs[m.Path+"@"+m.Version] = m.Dir
	}
	return dirs, nil
}

// field is a field of a DEP-5 paragraph: its first line after the name,
// the others as continuation lines (a space first, an empty line as " .").
func field(name, value string) string {
	first, rest, _ := strings.Cut(strings.TrimSpace(value), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", name, first)
	for line := range strings.Lines(rest) {
		b.WriteString(continuation(strings.TrimRight(line, " \t\n")))
	}
	return b.String()
}

// prose is a field whose text is wrapped: first on the field's line, then
// the text.
func prose(name, first, text string) string {
	lines := wrap(text, 72)
	if first == "" && len(lines) > 0 {
		first, lines = lines[0], lines[1:]
	}
	return field(name, first+"\n"+strings.Join(lines, "\n"))
}

func continuation(line string) string {
	if strings.TrimSpace(line) == "" {
		return " .\n"
	}
	return " " + line + "\n"
}

// wrap breaks text into lines of at most width columns at spaces (a longer
// word stays whole).
func wrap(text string, width int) []string {
	var lines []string
	var line string
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// debVersion is a semantic version as the .deb writes it, with nfpm's
// revision: 0.9.1-dev.3+g1a2b3c4 is 0.9.1~dev.3+g1a2b3c4-1.
func debVersion(semver string) string {
	v, meta, hasMeta := strings.Cut(semver, "+")
	v = strings.Replace(v, "-", "~", 1)
	if hasMeta {
		v += "+" + meta
	}
	return v + "-1"
}

// changelogFile is changelog.Debian.gz's text.
func changelogFile(repo, version, maintainer string) (string, error) {
	tagList, err := git(repo, "tag", "--list", "--merged", "HEAD", "v[0-9]*.[0-9]*.[0-9]*")
	if err != nil {
		return "", err
	}
	var tags []string // versions, newest first
	for t := range strings.Lines(tagList) {
		if v, ok := parseSemver(strings.TrimPrefix(strings.TrimSpace(t), "v")); ok && strings.HasPrefix(t, "v") {
			tags = append(tags, v.String())
		}
	}
	slices.SortFunc(tags, func(a, b string) int { return -compareSemver(a, b) })
	head, err := git(repo, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	head = strings.TrimSpace(head)
	commitOf := func(tag string) (string, error) {
		c, err := git(repo, "rev-list", "-n", "1", "v"+tag)
		return strings.TrimSpace(c), err
	}

	// The entries, newest first: the version built, where it is not a
	// tag's, then each release tag's. Each lists the commits after the
	// entry before it.
	type entry struct{ version, to, from string }
	var entries []entry
	if len(tags) > 0 {
		c, err := commitOf(tags[0])
		if err != nil {
			return "", err
		}
		if c == head && strings.TrimSuffix(version, "+dirty") == tags[0] {
			tags[0] = version // +dirty, where it is
		} else {
			entries = append(entries, entry{version: version, to: head})
		}
	} else {
		entries = append(entries, entry{version: version, to: head})
	}
	for _, t := range tags {
		c, err := commitOf(strings.TrimSuffix(t, "+dirty"))
		if err != nil {
			return "", err
		}
		if len(entries) > 0 {
			entries[len(entries)-1].from = c
		}
		entries = append(entries, entry{version: t, to: c})
	}

	var b strings.Builder
	for i, e := range entries {
		date, err := git(repo, "log", "-1", "--format=%ct", e.to)
		if err != nil {
			return "", err
		}
		secs, err := strconv.ParseInt(strings.TrimSpace(date), 10, 64)
		if err != nil {
			return "", err
		}
		var changes []string
		rng := e.to
		if e.from != "" {
			rng = e.from + ".." + e.to
		}
		subjects, err := git(repo, "log", "--no-merges", "--format=%s", rng)
		if err != nil {
			return "", err
		}
		for s := range strings.Lines(subjects) {
			changes = append(changes, strings.TrimSpace(s))
		}
		switch {
		case e.from == "" && len(tags) == 0:
			changes = []string{fmt.Sprintf("A development version: no release has been tagged yet (%d commits; git log lists them).", len(changes))}
		case e.from == "":
			changes = []string{fmt.Sprintf("The first release (%d commits since the repository began; git log lists them).", len(changes))}
		case len(changes) == 0:
			changes = []string{"No change but the version."}
		}
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "ingot (%s) unstable; urgency=medium\n\n", debVersion(e.version))
		for _, c := range changes {
			for j, line := range wrap(c, 76) {
				if j == 0 {
					b.WriteString("  * " + line + "\n")
				} else {
					b.WriteString("    " + line + "\n")
				}
			}
		}
		fmt.Fprintf(&b, "\n -- %s  %s\n", maintainer, time.Unix(secs, 0).UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	}
	return b.String(), nil
}

// semver is a version X.Y.Z[-PRERELEASE] (build metadata is not part of
// a tag's).
type semver struct {
	nums [3]int
	pre  string
}

func (v semver) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.nums[0], v.nums[1], v.nums[2])
	if v.pre != "" {
		s += "-" + v.pre
	}
	return s
}

func parseSemver(s string) (semver, bool) {
	m := regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?$`).FindStringSubmatch(s)
	if m == nil {
		return semver{}, false
	}
	var v semver
	for i := range 3 {
		v.nums[i], _ = strconv.Atoi(m[i+1])
	}
	v.pre = m[4]
	return v, true
}

// compareSemver orders versions as semver.org's precedence does.
func compareSemver(a, b string) int {
	va, _ := parseSemver(strings.TrimSuffix(a, "+dirty"))
	vb, _ := parseSemver(strings.TrimSuffix(b, "+dirty"))
	if c := slices.Compare(va.nums[:], vb.nums[:]); c != 0 {
		return c
	}
	switch {
	case va.pre == vb.pre:
		return 0
	case va.pre == "":
		return 1
	case vb.pre == "":
		return -1
	}
	pa, pb := strings.Split(va.pre, "."), strings.Split(vb.pre, ".")
	for i := range min(len(pa), len(pb)) {
		na, errA := strconv.Atoi(pa[i])
		nb, errB := strconv.Atoi(pb[i])
		switch {
		case errA == nil && errB == nil && na != nb:
			return cmp.Compare(na, nb)
		case errA == nil && errB != nil:
			return -1
		case errA != nil && errB == nil:
			return 1
		case errA != nil && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return cmp.Compare(len(pa), len(pb))
}
