package lien_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// onPostgres is the test under which newSite opens its stores on
// PostgreSQL: each test it runs is one of the package's own.
const onPostgres = "TestOnPostgres"

// TestOnPostgres runs the package's tests on PostgreSQL (a database each,
// on one server), as they run on bbolt.
func TestOnPostgres(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"HFSRefusesAtQuota", TestHFSRefusesAtQuota},
		{"HFSSurplusGoesToWhoAcceptsIt", TestHFSSurplusGoesToWhoAcceptsIt},
		{"HFSChargesCountAsDemand", TestHFSChargesCountAsDemand},
		{"FairShare", TestFairShare},
		{"LienChangesReservedAndAvailable", TestLienChangesReservedAndAvailable},
		{"ExpiredLienStopsCountingAtOnce", TestExpiredLienStopsCountingAtOnce},
		{"RefusalNamesProjectNeedAndAvailable", TestRefusalNamesProjectNeedAndAvailable},
		{"FallbackTakesTheJob", TestFallbackTakesTheJob},
		{"PoliciesMatchWorkedExamples", TestPoliciesMatchWorkedExamples},
		{"ChargeNeverFailsForLackOfFunds", TestChargeNeverFailsForLackOfFunds},
		{"IncrementalChargesShrinkTheLien", TestIncrementalChargesShrinkTheLien},
		{"Refund", TestRefund},
		{"RatesWithQOSAndNightDiscount", TestRatesWithQOSAndNightDiscount},
		{"NewRatesPriceTheNextJobs", TestNewRatesPriceTheNextJobs},
		{"GuaranteedQuoteFreezesRates", TestGuaranteedQuoteFreezesRates},
		{"Extend", TestExtend},
		{"ReservationChargesIdleCycles", TestReservationChargesIdleCycles},
		{"BadInputRefusedAndNothingWritten", TestBadInputRefusedAndNothingWritten},
		{"ConcurrentLiensStopAtFunds", TestConcurrentLiensStopAtFunds},
		{"ChargeRetriedChargesOnce", TestChargeRetriedChargesOnce},
		{"RefusalWithMissingFallbackIsStillForFunds", TestRefusalWithMissingFallbackIsStillForFunds},
		{"LienThatWouldBeExpiredIsRefused", TestLienThatWouldBeExpiredIsRefused},
		{"ReservedAtAPastTime", TestReservedAtAPastTime},
		{"NewRatesPriceAtOnce", TestNewRatesPriceAtOnce},
		{"NewPolicyChargesAtOnce", TestNewPolicyChargesAtOnce},
		{"TimesPastYear9999AreRefused", TestTimesPastYear9999AreRefused},
		{"QuoteSaysWhetherTheLienWouldBeGranted", TestQuoteSaysWhetherTheLienWouldBeGranted},
		{"CachedAvailabilityIsExact", TestCachedAvailabilityIsExact},
		{"RefusedLienNamesVictims", TestRefusedLienNamesVictims},
		{"CachedPreemptionIsExact", TestCachedPreemptionIsExact},
		{"Archive", TestArchive},
		{"EndedAllocationsLeaveTheHotPath", TestEndedAllocationsLeaveTheHotPath},
		{"ChargeAfterItsAllocationEnded", TestChargeAfterItsAllocationEnded},
		{"UsedUpAllocationsLeaveTheHotPath", TestUsedUpAllocationsLeaveTheHotPath},
		{"OverdraftOfUsedUpAllocation", TestOverdraftOfUsedUpAllocation},
		{"AuditFindsUsedUpSumsAltered", TestAuditFindsUsedUpSumsAltered},
		{"UsedUpAllocationRevivedByItsLimit", TestUsedUpAllocationRevivedByItsLimit},
		{"ArchiveOfRecordsKeptWhole", TestArchiveOfRecordsKeptWhole},
	} {
		t.Run(tc.name, tc.run)
	}
}

// TestTwoServersNeverOversubscribe places 1,000 liens at once through two
// banks, each on a store of its own (a pool of connections each, as two
// ingot serve processes have), on one database, against a project that
// can cover exactly 100 of them: exactly 100 are placed, and the journal
// both wrote is one chain (the audit at the end replays it).
func TestTwoServersNeverOversubscribe(t *testing.T) {
	url := pgtest.DB(t)
	s := newSiteOn(t, func(tb testing.TB) ledger.Store { return pgstoretest.OpenURL(tb, url) })
	s.MustDeposit("chem", "6000", time.Time{}) // 100 liens of 60
	other := pgstoretest.OpenURL(t, url)
	defer other.Close()
	l, err := ledger.Open(context.Background(), other, ledger.WithClock(s.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	banks := []*lien.Bank{s.lb, lien.New(l)}
	ok, refused := ledgertest.Race(t, 1000, func(i int) error {
		_, err := banks[i%2].Place(context.Background(), ledger.Request{Actor: "sched", ID: fmt.Sprint("c", i)},
			lien.PlaceSpec{Job: job(fmt.Sprint("c", i)), User: "amy", Request: request(1, 60)})
		return err
	})
	if ok != 100 || refused != 900 {
		t.Errorf("%d liens placed, %d refused; want 100 and 900", ok, refused)
	}
	bal := s.MustBalance("chem")
	wantAmount(t, "reserved", bal.Reserved, "6000")
	wantAmount(t, "available", bal.Available, "0")
}
