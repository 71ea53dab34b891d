package boltstore_test

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// The benchmarks print ingot's figures beside raw bbolt doing the nearest
// thing (one durable put per operation; one get per read) in the same run,
// so the ratio holds on a noisy machine. Writers run 1 and 64 at a time:
// with 64, group commit shares one fsync among many deposits.

func perSecond(b *testing.B, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

func BenchmarkDeposit(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("ingot/writers=%d", writers), func(b *testing.B) {
			bank := ledgertest.NewBank(b, ledgertest.Bolt)
			bank.MustNode("chem")
			one := decimal.NewFromInt(1)
			parallel(b, writers, func() {
				if _, err := bank.Deposit(bank.Req(), ledger.DepositSpec{Account: "chem", Amount: one}); err != nil {
					b.Fatal(err)
				}
			})
			perSecond(b, "deposits/s")
		})
		b.Run(fmt.Sprintf("bbolt/writers=%d", writers), func(b *testing.B) {
			db := rawBolt(b)
			value := make([]byte, 400) // about one journal entry
			var key atomic.Uint64
			parallel(b, writers, func() {
				k := binary.BigEndian.AppendUint64(nil, key.Add(1))
				put := func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put(k, value) }
				var err error
				if writers == 1 {
					err = db.Update(put)
				} else {
					err = db.Batch(put)
				}
				if err != nil {
					b.Fatal(err)
				}
			})
			perSecond(b, "puts/s")
		})
	}
}

func BenchmarkBalance(b *testing.B) {
	b.Run("ingot", func(b *testing.B) {
		bank := ledgertest.NewBank(b, ledgertest.Bolt)
		bank.MustNode("chem")
		for i := 0; i < 10; i++ { // a typical account: a few allocations
			bank.MustDeposit("chem", "100", time.Time{})
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := bank.BalanceAt("chem", time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		perSecond(b, "reads/s")
	})
	b.Run("bbolt", func(b *testing.B) {
		db := rawBolt(b)
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
		perSecond(b, "reads/s")
	})
}

// parallel runs op b.N times over n goroutines.
func parallel(b *testing.B, n int, op func()) {
	var next atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	for g := 0; g < n; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for next.Add(1) <= int64(b.N) {
				op()
			}
		}()
	}
	for g := 0; g < n; g++ {
		<-done
	}
	b.StopTimer()
}

func rawBolt(b *testing.B) *bolt.DB {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		b.Fatal(err)
	}
	return db
}
