package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

func migrateCommands() []*cli.Command {
	return []*cli.Command{{
		Name: "migrate",
		Usage: "copy a bank with its whole journal into a new store: from a bbolt file into PostgreSQL, or back; " +
			"both banks are audited in full after, and must give the same balances",
		Description: "--from and --to are each a bank file or a PostgreSQL connection string (postgres://...). The bank\n" +
			"--from is read from one snapshot and left as it is; --to must be a file that does not exist yet, or a\n" +
			"database that holds no bank (ingot makes its tables). Stop the servers of the bank first: changes made\n" +
			"during the copy are not in it. The server key is not in a bank: the new one uses the same file.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "the bank to copy: a `FILE` or a PostgreSQL URL"},
			&cli.StringFlag{Name: "to", Usage: "where to copy it: a new `FILE` or an empty PostgreSQL database's URL"},
		},
		Action: localOnly(migrate),
	}}
}

func migrate(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	from, to := c.String("from"), c.String("to")
	if from == "" || to == "" {
		return usageError{"migrate needs --from (a bank file or a PostgreSQL URL) and --to (a new file or an empty database)"}
	}
	if !isPostgres(to) {
		if _, err := os.Stat(to); err == nil {
			return fmt.Errorf("%w: migrate: %s exists; the copy goes into a new file", ledger.ErrExists, to)
		}
	}
	src, srcName, err := openStoreAt(c, from, boltstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, dstName, err := openStoreAt(c, to, boltstore.Options{Create: true, OnUpgrade: reportUpgrade(c)})
	if err != nil {
		return err
	}
	total, err := ledger.JournalLength(c.Context, src)
	if err != nil {
		dst.Close()
		return fmt.Errorf("migrate %s: %w", srcName, err)
	}
	meter := progress.New(c.App.ErrWriter, "migrate", "journal entries", int64(total))
	rep, err := ledger.Copy(c.Context, src, dst, ledger.CopyOptions{Progress: func(n int) { meter.Set(int64(n)) }})
	meter.Stop()
	if err == nil {
		err = sameBanks(c, src, dst, srcName, dstName)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if !isPostgres(to) {
			os.Remove(to) // a file made for the copy, never one that was there
		}
		return fmt.Errorf("migrate %s to %s: %w", srcName, dstName, err)
	}
	if flagBool(c, "json") {
		return writeJSON(c.App.Writer, struct {
			From   string            `json:"from"`
			To     string            `json:"to"`
			Copied ledger.CopyReport `json:"copied"`
		}{srcName, dstName, rep})
	}
	fmt.Fprintf(c.App.Writer, "migrate: copied %s to %s (journal entries %d, allocations %d, liens %d, charges %d, records %d, kept answers %d); "+
		"both audited in full, with the same balances\n", srcName, dstName, rep.Entries, rep.Allocations, rep.Liens, rep.Charges, rep.Records, rep.Requests)
	return nil
}

// sameBanks audits both banks in full and compares their balances at one
// instant.
func sameBanks(c *cli.Context, src, dst ledger.Store, srcName, dstName string) error {
	at := time.Now()
	var balances [2][]byte
	for i, s := range []ledger.Store{src, dst} {
		name := []string{srcName, dstName}[i]
		l, err := ledger.Open(c.Context, s)
		if err != nil {
			return err
		}
		rep, err := l.Audit(c.Context, ledger.AuditOptions{Full: true})
		if err != nil {
			return fmt.Errorf("audit of %s: %w", name, err)
		}
		if len(rep.Problems) > 0 {
			return fmt.Errorf("%w: %s: %s", errAuditFailed, name, rep.Problems[0])
		}
		nb, err := l.BalancesWithUpcoming(c.Context, at)
		if err != nil {
			return err
		}
		if balances[i], err = json.Marshal(nb); err != nil {
			return err
		}
	}
	if string(balances[0]) != string(balances[1]) {
		return errors.New("the copy's balances are not the bank's")
	}
	return nil
}
