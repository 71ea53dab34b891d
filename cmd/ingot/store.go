package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

// storeFlag names a bank in PostgreSQL, beside --db's bbolt file.
func storeFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "store",
		Usage: "the bank in the PostgreSQL database at `URL` (postgres://user:password@host:port/database, or libpq's key=value; " +
			"several hosts with target_session_attrs=read-write for failover) instead of --db's file (or INGOT_STORE)"}
}

// openStore opens the store of this command's bank: the bbolt file of
// --db, or the PostgreSQL database of --store. opts are bbolt's; a
// PostgreSQL store takes what applies of them (Create, ReadOnly, NoUpgrade, OnCommit,
// OnUpgrade, whose copy of the file is then ""). name names the bank in
// messages, without a password.
func openStore(c *cli.Context, opts boltstore.Options) (store ledger.Store, name string, err error) {
	path, url := flagString(c, "db"), flagString(c, "store")
	switch {
	case path != "" && url != "":
		return nil, "", usageError{"both --db (or INGOT_DB) and --store (or INGOT_STORE) name a bank: give one"}
	case url != "":
		return openPostgres(c, url, opts)
	case path == "":
		return nil, "", errNoDatabase
	}
	return openFile(c, path, opts)
}

// openStoreAt opens the store at where: a PostgreSQL connection string
// (postgres:// or postgresql://, or libpq's key=value), else a bbolt file.
func openStoreAt(c *cli.Context, where string, opts boltstore.Options) (ledger.Store, string, error) {
	if isPostgres(where) {
		return openPostgres(c, where, opts)
	}
	return openFile(c, where, opts)
}

func isPostgres(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://") || strings.Contains(where, "=")
}

func openPostgres(c *cli.Context, url string, opts boltstore.Options) (ledger.Store, string, error) {
	s, err := pgstore.Open(c.Context, url, pgstore.Options{Create: opts.Create, ReadOnly: opts.ReadOnly, NoUpgrade: opts.NoUpgrade, OnCommit: opts.OnCommit,
		OnUpgrade: func(from, to uint64) {
			if opts.OnUpgrade != nil {
				opts.OnUpgrade(from, to, "")
			}
		}})
	if err != nil {
		return nil, "", err
	}
	return s, s.String(), nil
}

func openFile(c *cli.Context, path string, opts boltstore.Options) (ledger.Store, string, error) {
	if opts.Create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, "", fmt.Errorf("%w: %s does not exist (create a bank with `ingot init --db %s`)", ledger.ErrNotInitialized, path, path)
	}
	opts.LockTimeout = lockTimeout
	s, err := boltstore.Open(path, opts)
	if err != nil {
		return nil, "", err
	}
	return s, path, nil
}

// reportUpgrade tells the user, on stderr, that the bank was upgraded, and
// where the file as it was is kept (a PostgreSQL bank is upgraded in one
// transaction, and keeps no copy).
func reportUpgrade(c *cli.Context) func(from, to uint64, backup string) {
	return func(from, to uint64, backup string) {
		name := flagString(c, "db")
		if backup == "" {
			fmt.Fprintf(c.App.ErrWriter, "ingot: upgraded the bank from schema %d to %d\n", from, to)
			return
		}
		fmt.Fprintf(c.App.ErrWriter, "ingot: upgraded %s from schema %d to %d; the file as it was is %s\n", name, from, to, backup)
	}
}
