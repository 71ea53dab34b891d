package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

// version and commit are what this binary was built from: the Makefile
// sets them from git with -ldflags "-X main.version=... -X main.commit=...".
// A plain `go build` leaves version "devel" and the commit to Go's build
// information (absent when built with -buildvcs=false).
var (
	version = "devel"
	commit  = ""
)

// buildInfo is what `ingot version` prints: enough for an operator to say
// which ingot runs and which bank files it reads.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	// Schema is that of the bank files it writes (bbolt), PostgresSchema
	// that of the banks it makes in PostgreSQL.
	Schema         uint64 `json:"schema"`
	PostgresSchema uint64 `json:"postgres_schema"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version(), Schema: boltstore.SchemaVersion, PostgresSchema: pgstore.SchemaVersion}
	if info, ok := debug.ReadBuildInfo(); ok && b.Commit == "" {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
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
		Usage:  "print ingot's version, the commit it was built from, its Go version and the schema of the banks it writes, in files and in PostgreSQL (also --version)",
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
	fmt.Fprintf(w, "ingot %s\ncommit %s\ngo     %s\nschema %d (bank files), %d (PostgreSQL)\n", b.Version, commit, b.Go, b.Schema, b.PostgresSchema)
}

// urfave/cli prints --version with its package-wide printer and flag; they
// are set once here, before any app runs, so that --version prints what
// `ingot version` does and -v stays free.
func init() {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version, as `ingot version` does"}
	cli.VersionPrinter = func(c *cli.Context) { writeVersion(c.App.Writer, currentBuild()) }
}
