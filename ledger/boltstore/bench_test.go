package boltstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// The benchmarks print ingot's figures beside raw bbolt doing the nearest
// thing (one durable put per deposit; one get per read) in the same run.
// Writers run 1 and 64 at a time: with 64, group commit shares one fsync
// among many deposits.

func BenchmarkDeposit(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("ingot/writers=%d", writers), func(b *testing.B) {
			bank := ledgertest.NewBank(b, bolttest.Open)
			bank.MustNode("chem")
			one := decimal.NewFromInt(1)
			ledgertest.Parallel(b, writers, func() {
				if _, err := bank.Deposit(context.Background(), bank.Req(), ledger.DepositSpec{Account: "chem", Amount: one}); err != nil {
					b.Fatal(err)
				}
			})
			ledgertest.PerSecond(b, "deposits/s")
		})
		b.Run(fmt.Sprintf("bbolt/writers=%d", writers), func(b *testing.B) {
			raw := ledgertest.OpenRawBolt(b)
			value := make([]byte, 400) // about one journal entry
			ledgertest.Parallel(b, writers, func() {
				if err := raw.Put(value, writers > 1); err != nil {
					b.Fatal(err)
				}
			})
			ledgertest.PerSecond(b, "puts/s")
		})
	}
}

func BenchmarkBalance(b *testing.B) {
	b.Run("ingot", func(b *testing.B) {
		bank := ledgertest.NewBank(b, bolttest.Open)
		bank.MustNode("chem")
		for i := 0; i < 10; i++ { // a typical account: a few allocations
			bank.MustDeposit("chem", "100", time.Time{})
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := bank.BalanceAt(context.Background(), "chem", time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		ledgertest.PerSecond(b, "reads/s")
	})
	b.Run("bbolt", func(b *testing.B) {
		db := ledgertest.OpenRawBolt(b).DB
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("k"), make([]byte, 400)) }); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := db.View(func(tx *bolt.Tx) error {
					if tx.Bucket([]byte("b")).Get([]byte("k")) == nil {
						return fmt.Errorf("missing")
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
		ledgertest.PerSecond(b, "reads/s")
	})
}
