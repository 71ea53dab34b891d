package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

// version and commit are what this binary was built from: the Makefile
// sets them with -ldflags "-X main.version=... -X main.commit=...", the
// version a semantic version made of git's release tags by
// contrib/packaging/version.sh (0.9.0 on the tag v0.9.0,
// 0.9.1-dev.3+g1a2b3c4 three commits after it, 0.0.0-dev.N+g<commit>
// before the first tag; docs/operations.md, Releases). Built otherwise,
// version is what Go recorded of the module (v0.9.0 for `go install
// .../cmd/ingot@v0.9.0`, a pseudo-version in a checkout), else devVersion,
// and the commit is Go's own record of it (absent with -buildvcs=false).
var (
	version = devVersion
	commit  = ""
)

// devVersion is the version of a binary that says nothing of its source.
const devVersion = "0.0.0-dev"

// buildInfo is what `ingot version` prints: enough for an operator to say
// which ingot runs and which bank files it reads.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	// Platform is GOOS/GOARCH; CGO whether the binary was built with cgo,
	// which looks users up through NSS (LDAP, SSSD), where without it
	// only /etc/passwd and /etc/group are read (the static binaries of a
	// release, and the container image).
	Platform string `json:"platform"`
	CGO      bool   `json:"cgo"`
	// Schema is that of the bank files it writes (bbolt), PostgresSchema
	// that of the banks it makes in PostgreSQL.
	Schema         uint64 `json:"schema"`
	PostgresSchema uint64 `json:"postgres_schema"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Schema: boltstore.SchemaVersion, PostgresSchema: pgstore.SchemaVersion}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "CGO_ENABLED":
				b.CGO = s.Value == "1"
			case s.Key == "vcs.revision" && commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified" && commit == "":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func versionCommands() []*cli.Command {
	return []*cli.Command{{
		Name:   "version",
		Usage:  "print ingot's version (semantic, from git's release tags), the commit it was built from, its Go version, platform and whether it looks users up through NSS (cgo), and the schema of the banks it writes, in files and in PostgreSQL (also --version)",
		Action: printVersion,
	}}
}

func printVersion(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	b := currentBuild()
	if f == formatJSON {
		return writeJSON(c.App.Writer, b)
	}
	writeVersion(c.App.Writer, b)
	return nil
}

func writeVersion(w io.Writer, b buildInfo) {
	commit := b.Commit
	if b.Modified {
		commit += " (with uncommitted changes)"
	}
	cgo := "cgo"
	if !b.CGO {
		cgo = "static, without cgo: users from /etc/passwd only"
	}
	fmt.Fprintf(w, "ingot %s\ncommit %s\ngo     %s\nbuilt  %s, %s\nschema %d (bank files), %d (PostgreSQL)\n",
		b.Version, commit, b.Go, b.Platform, cgo, b.Schema, b.PostgresSchema)
}

// init settles the version before any app takes it. urfave/cli prints
// --version with its package-wide printer and flag; they are set once
// here, before any app runs, so that --version prints what `ingot
// version` does and -v stays free.
func init() {
	if info, ok := debug.ReadBuildInfo(); ok && version == devVersion {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			version = strings.TrimPrefix(v, "v")
		}
	}
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version, as `ingot version` does"}
	cli.VersionPrinter = func(c *cli.Context) { writeVersion(c.App.Writer, currentBuild()) }
}
