package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

func initCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "init",
		Usage: "create a new bank database at --db",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "precision", Value: ledger.DefaultPrecision, Usage: "decimal places of every amount (0 to 8; fixed for the life of the bank)"},
		},
		Action: localOnly(func(c *cli.Context) error {
			path := flagString(c, "db")
			if path == "" {
				return errNoDatabase
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return fmt.Errorf("init: %w", err)
			}
			store, err := boltstore.Open(path, boltstore.Options{Create: true, LockTimeout: lockTimeout, OnUpgrade: reportUpgrade(c.App.ErrWriter, path)})
			if err != nil {
				return err
			}
			defer store.Close()
			p := c.Int("precision")
			if p < 0 || p > 8 {
				return usageError{fmt.Sprintf("--precision %d: use 0 to 8 decimal places", p)}
			}
			s := ledger.Settings{Precision: int32(p)}
			if err := ledger.Init(c.Context, store, s, request(c), time.Now()); err != nil {
				return fmt.Errorf("init %s: %w", path, err)
			}
			fmt.Fprintf(c.App.Writer, "created bank %s (precision %d)\n", path, s.Precision)
			return nil
		}),
	}}
}
