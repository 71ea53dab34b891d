package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

func adminCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:   "audit",
			Usage:  "replay the journal, check its hash chain and compare every balance with the stored state: the changes since the last clean audit, or with --full the whole journal and the file's pages",
			Flags:  []cli.Flag{&cli.BoolFlag{Name: "full", Usage: "replay the whole journal and check the storage engine's pages, not only what changed since the last clean audit"}},
			Action: audit,
		},
		{
			Name:      "backup",
			Usage:     "write a consistent copy of the bank to FILE (safe while the bank is in use), then audit the copy; on the bank's host. A bank in PostgreSQL is copied as a SQL script, which psql restores into an empty database",
			ArgsUsage: "FILE",
			Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "replace FILE if it exists"},
				&cli.BoolFlag{Name: "compact", Usage: "write the copy compacted: without the free pages the bank's file has grown (the copy is still audited)"}},
			Action: backup,
		},
		archiveCommand(),
		{
			Name: "upgrade",
			Usage: "upgrade the bank to this ingot's schema, keeping a bank file as it was beside it (FILE.schemaN.bak); " +
				"commands that only read never upgrade, and refuse an earlier bank",
			Action: localOnly(upgrade),
		},
		{
			Name:   "man",
			Usage:  "print the manual page (roff): ingot man > ingot.1; man ./ingot.1",
			Action: manPage,
		},
	}
}

// upgrade opens the bank read-write, which upgrades an earlier schema,
// and says what it did.
func upgrade(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	report, upgraded := reportUpgrade(c), false
	opts := boltstore.Options{OnUpgrade: func(from, to uint64, backup string) {
		upgraded = true
		report(from, to, backup)
	}}
	return withStore(c, opts, func(*ledger.Ledger, ledger.Store) error {
		switch {
		case flagBool(c, "json"):
			return writeJSON(c.App.Writer, struct {
				Upgraded bool `json:"upgraded"`
			}{upgraded})
		case !upgraded:
			fmt.Fprintln(c.App.Writer, "upgrade: the bank has this ingot's schema already; nothing to do")
		}
		return nil
	})
}

func audit(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		opts := ledger.AuditOptions{Full: c.Bool("full")}
		// The server audits in a job of its own, whose progress its log
		// shows; on the file, the command shows it.
		if local, ok := b.bankService.(localBank); ok {
			var total uint64
			if opts.Full {
				var err error
				if total, err = local.JournalLength(c.Context); err != nil {
					return fmt.Errorf("audit: %w", err)
				}
			}
			meter := progress.New(c.App.ErrWriter, "audit", "journal entries", int64(total))
			defer meter.Stop()
			opts.Progress = func(n uint64) { meter.Set(int64(n)) }
		}
		rep, err := b.Audit(c.Context, opts)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		return reportAudit(c, rep)
	})
}

func reportAudit(c *cli.Context, rep ledger.AuditReport) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	if f == formatJSON {
		if err := writeJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		if rep.Full {
			fmt.Fprintf(c.App.Writer, "audit: %d journal entries, %d allocations, %d nodes replayed\n", rep.Entries, rep.Allocations, rep.Nodes)
		} else {
			fmt.Fprintf(c.App.Writer, "audit: %d journal entries since the last clean audit (entry %d on), %d allocations, %d nodes checked; --full replays all\n", rep.Entries, rep.From, rep.Allocations, rep.Nodes)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(c.App.Writer, "PROBLEM: %s\n", p)
		}
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%w: %d problems", errAuditFailed, len(rep.Problems))
	}
	if f != formatJSON {
		fmt.Fprintln(c.App.Writer, "audit: OK")
	}
	return nil
}

// backup writes the copy to a temporary file beside FILE, syncs it, audits
// it, and only then renames it into place: FILE is never half-written.
func backup(c *cli.Context) error {
	a, err := args(c, "FILE")
	if err != nil {
		return err
	}
	dest := a[0]
	if c.Bool("compact") && flagString(c, "store") != "" {
		return usageError{"backup --compact compacts a bbolt file; a bank in PostgreSQL is copied as a SQL script"}
	}
	if info, err := os.Stat(dest); err == nil {
		switch {
		case info.IsDir():
			return usageError{fmt.Sprintf("backup: %s is a directory: give the copy's file name (%s)", dest, filepath.Join(dest, "ingot-copy.db"))}
		case !c.Bool("force"):
			return fmt.Errorf("%w: backup: %s exists (use --force to replace it)", ledger.ErrExists, dest)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".ingot-backup-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	var size int64
	err = withBank(c, func(b bank) error {
		var total int64 // the file's size bounds its copy's; a server's is not known here
		if _, local := b.bankService.(localBank); local && flagString(c, "db") != "" {
			total = fileSize(flagString(c, "db"))
		}
		meter := progress.New(c.App.ErrWriter, "backup", "bytes", total)
		defer meter.Stop()
		size, err = b.Backup(c.Context, &progress.Writer{W: tmp, Report: meter.Set})
		return err
	})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if script, err := isPGBackup(tmp.Name()); err != nil || script {
		if err == nil && c.Bool("compact") {
			err = usageError{"backup --compact compacts a bbolt file; the bank is in PostgreSQL, and its copy a SQL script"}
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dest)
		}
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		if flagBool(c, "json") {
			return writeJSON(c.App.Writer, backupWritten{File: dest, Bytes: size, Format: "sql"})
		}
		fmt.Fprintf(c.App.Writer, "backup: wrote %s (%d bytes): a SQL script of the bank in PostgreSQL, from one snapshot; "+
			"psql -v ON_ERROR_STOP=1 -f %[1]s URL restores it into an empty database, where `ingot --store URL audit --full` checks it\n", dest, size)
		return nil
	}
	if c.Bool("compact") {
		if err := compactFile(tmp.Name()); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		size = fileSize(tmp.Name())
	}
	rep, err := auditFile(c.Context, tmp.Name())
	if err != nil {
		return fmt.Errorf("backup: audit of the copy: %w", err)
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%w: backup copy: %s", errAuditFailed, strings.Join(rep.Problems, "; "))
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if flagBool(c, "json") {
		return writeJSON(c.App.Writer, backupWritten{File: dest, Bytes: size, Format: "bbolt", Entries: rep.Entries, Audit: "ok"})
	}
	fmt.Fprintf(c.App.Writer, "backup: wrote %s (%d bytes, %d journal entries, audit OK)\n", dest, size, rep.Entries)
	return nil
}

// backupWritten is what backup --json prints of the copy it wrote.
type backupWritten struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
	// Format is bbolt (a bank file) or sql (a PostgreSQL bank's script).
	Format string `json:"format"`
	// Entries and Audit are those of the audit of a bank file's copy.
	Entries uint64 `json:"entries,omitempty"`
	Audit   string `json:"audit,omitempty"`
}

// isPGBackup says whether the copy at path is a PostgreSQL bank's SQL
// script (through --server, the command learns the engine only from it).
func isPGBackup(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(pgstore.BackupPrefix))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return string(head[:n]) == pgstore.BackupPrefix, nil
}

func auditFile(ctx context.Context, path string) (ledger.AuditReport, error) {
	store, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		return ledger.AuditReport{}, err
	}
	defer store.Close()
	l, err := ledger.Open(ctx, store)
	if err != nil {
		return ledger.AuditReport{}, err
	}
	return l.Audit(ctx, ledger.AuditOptions{Full: true})
}

// manPage prints the manual of an app made afresh, not of the running one:
// its flags hold no values from this environment, and its commands list
// only their own flags (the common ones are under GLOBAL OPTIONS).
func manPage(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	app := appWithoutCommonFlags(io.Discard, io.Discard)
	page, err := app.ToManWithSection(1)
	if err != nil {
		return fmt.Errorf("man: %w", err)
	}
	_, err = fmt.Fprint(c.App.Writer, page+manSections(app))
	return err
}
