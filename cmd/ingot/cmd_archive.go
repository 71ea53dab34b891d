package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/internal/boltfile"
	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

func archiveCommand() *cli.Command {
	return &cli.Command{
		Name: "archive",
		Usage: "move the journal entries made before --before, and what only they need, into the new bank file FILE (audited on its own), " +
			"then compact the bank's file (a bank file; PostgreSQL vacuums its own); with every server of the bank stopped. statement, journal and balance --at read them with --archive FILE",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{&cli.StringFlag{Name: "before",
			Usage: "archive the entries made before `TIME` (2026-01-01, \"2026-01-01 00:00\", RFC 3339; local time)"}},
		Action: localOnly(archive),
	}
}

// archive moves the old entries into FILE, then compacts the bank's file
// into a copy beside it while the bank stays open (and locked), and puts
// the copy in its place: a crash leaves the bank before or after the
// swap, both whole. FILE is removed if nothing was moved. A bank in
// PostgreSQL is archived the same way into FILE, a bank file; its
// database is not compacted (PostgreSQL's VACUUM reuses the space).
func archive(c *cli.Context) error {
	a, err := args(c, "FILE")
	if err != nil {
		return err
	}
	dest := a[0]
	if !c.IsSet("before") {
		return usageError{"ingot archive needs --before TIME: the entries made before it are archived"}
	}
	before, err := parseTimeFlag(c, "before")
	if err != nil {
		return err
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("%w: archive: %s exists: an archive is a new file", ledger.ErrExists, dest)
	}
	l, store, err := openBank(c, boltstore.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	dst, err := boltstore.Open(dest, boltstore.Options{Create: true})
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	steps := progress.NewSteps(c.App.ErrWriter, "archive")
	rep, err := l.Archive(c.Context, before, dst, filepath.Base(dest), func(step string, done, total uint64) {
		steps.Set(step, "journal entries", int64(done), int64(total))
	})
	steps.Stop()
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if rep.Boundary.Seq == 0 {
			os.Remove(dest) // nothing was moved
		}
		return fmt.Errorf("archive: %w", err)
	}
	// The archive was written a batch of entries at a time: compacted, it
	// keeps what the bank kept of them, no more.
	if err := compactFile(dest); err != nil {
		return fmt.Errorf("archive: the entries are archived in %s, but compacting it failed (it is whole, only not smaller): %w", dest, err)
	}
	fmt.Fprintf(c.App.Writer, "archive: entries %d to %d (made before %s) are in %s (%d bytes; %d entries replayed by its audit: OK); the bank no longer keeps %d liens and %d charges of them\n",
		rep.From, rep.To, before.Local().Format(time.RFC3339), dest, fileSize(dest), rep.ArchiveEntries, rep.Liens, rep.Charges)
	bank, onFile := store.(*boltstore.Store)
	if !onFile {
		fmt.Fprintf(c.App.Writer, "archive: PostgreSQL reuses the space of the rows removed once it has vacuumed them; statements, journals and balances before %s need --archive %s\n",
			before.Local().Format(time.RFC3339), dest)
		return nil
	}
	path := flagString(c, "db")
	sizeBefore := fileSize(path)
	compacted := path + ".compact"
	if err := bank.CompactTo(compacted); err != nil {
		os.Remove(compacted)
		return fmt.Errorf("archive: the entries are archived, but compacting %s failed (it is whole, only not smaller; ingot backup --compact makes a smaller copy): %w", path, err)
	}
	if err := swapIn(compacted, path); err != nil {
		return fmt.Errorf("archive: the entries are archived, but %s was not replaced by its compacted copy %s: %w", path, compacted, err)
	}
	fmt.Fprintf(c.App.Writer, "archive: %s compacted from %d to %d bytes; statements, journals and balances before %s need --archive %s\n",
		path, sizeBefore, fileSize(path), before.Local().Format(time.RFC3339), dest)
	return nil
}

// compactFile replaces the bbolt file at path, which nothing holds, by a
// compacted copy of it.
func compactFile(path string) error {
	compacted := path + ".compact"
	if err := boltfile.Compact(compacted, path); err != nil {
		os.Remove(compacted)
		return err
	}
	return swapIn(compacted, path)
}

// swapIn renames from over to and syncs their directory, so that the
// rename survives a crash.
func swapIn(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}
