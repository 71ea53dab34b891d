package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

func initCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "init",
		Usage: "create a new bank: the database file of --db, or the tables of one in the PostgreSQL database of --store",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "precision", Value: ledger.DefaultPrecision, Usage: "decimal places of every amount (0 to 8; fixed for the life of the bank)"},
		},
		Action: localOnly(func(c *cli.Context) error {
			p := c.Int("precision")
			if p < 0 || p > 8 {
				return usageError{fmt.Sprintf("--precision %d: use 0 to 8 decimal places", p)}
			}
			store, name, err := openStore(c, boltstore.Options{Create: true, OnUpgrade: reportUpgrade(c)})
			if err != nil {
				return err
			}
			defer store.Close()
			s := ledger.Settings{Precision: int32(p)}
			if err := ledger.Init(c.Context, store, s, request(c), time.Now()); err != nil {
				return fmt.Errorf("init %s: %w", name, err)
			}
			if flagBool(c, "json") {
				return writeJSON(c.App.Writer, struct {
					Bank      string `json:"bank"`
					Precision int32  `json:"precision"`
				}{name, s.Precision})
			}
			fmt.Fprintf(c.App.Writer, "created bank %s (precision %d)\n", name, s.Precision)
			return nil
		}),
	}}
}
