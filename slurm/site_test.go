package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// fakeBank is a bank of nodes that charges a CPU-second a credit and
// quotes against one amount available: enough for the logic of the hooks
// and sync, without a ledger.
type fakeBank struct {
	nodes     []string
	available decimal.Decimal
	fallback  string
	charges   map[string][]ledger.Charge
}

func (b *fakeBank) Nodes(context.Context, string) ([]ledger.Node, error) {
	var nodes []ledger.Node
	for _, n := range b.nodes {
		nodes = append(nodes, ledger.Node{Name: n})
	}
	return nodes, nil
}

func (b *fakeBank) Quote(_ context.Context, spec lien.QuoteSpec) (lien.QuoteResult, error) {
	cost := decimal.NewFromInt(spec.Request.Resources.Processors * spec.Request.WallclockLimitSeconds)
	q := lien.QuoteResult{Project: spec.Project, Amount: charge.Amount{Credits: cost}, Available: b.available, Covered: cost.LessThanOrEqual(b.available)}
	if !q.Covered && b.fallback != "" {
		q.Covered, q.Fallback = true, b.fallback
	} else if !q.Covered {
		q.Refusal = fmt.Sprintf("ledger: insufficient funds: project %s needs %s, %s available", spec.Project, cost, b.available)
	}
	return q, nil
}

func (b *fakeBank) Available(context.Context, string) (decimal.Decimal, error) {
	return b.available, nil
}

func (b *fakeBank) Rates(context.Context) (charge.RateTable, error) {
	return charge.DefaultRateTable(), nil
}

func (b *fakeBank) Place(context.Context, ledger.Request, lien.PlaceSpec) (lien.LienResult, error) {
	return lien.LienResult{}, errors.New("no liens here")
}

func (b *fakeBank) Release(context.Context, ledger.Request, lien.Job) (ledger.Lien, error) {
	return ledger.Lien{}, ledger.ErrNotFound
}

func (b *fakeBank) Reservations(context.Context) ([]lien.Reservation, error) { return nil, nil }

func (b *fakeBank) Charges(_ context.Context, job lien.Job) ([]ledger.Charge, error) {
	if len(b.charges[job.ID]) == 0 {
		return nil, ledger.ErrNotFound
	}
	return b.charges[job.ID], nil
}

func (b *fakeBank) Charge(_ context.Context, _ ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error) {
	if len(b.charges[spec.ID]) > 0 {
		return lien.ChargeResult{}, lien.ErrAlreadyCharged
	}
	if spec.Project == "bad" {
		return lien.ChargeResult{}, fmt.Errorf("%w: user %s is not a member of bad", lien.ErrNotMember, spec.User)
	}
	ch := ledger.Charge{JobRef: ledger.JobRef{JobID: spec.ID, Machine: spec.Machine, Project: spec.Project, User: spec.User},
		Amount: decimal.NewFromInt(spec.Usage.WallclockSeconds * spec.Usage.Resources.Processors), Final: true}
	if b.charges == nil {
		b.charges = map[string][]ledger.Charge{}
	}
	b.charges[spec.ID] = append(b.charges[spec.ID], ch)
	return lien.ChargeResult{Charge: ch}, nil
}

func testSite(b Bank, sacct map[string]string) (*Site, *bytes.Buffer) {
	var out bytes.Buffer
	return &Site{Bank: b, Machine: "hpc1", Cluster: "hpc1", Out: &out, Log: &out,
		Run: func(_ context.Context, name string, args ...string) (string, error) {
			key := strings.Join(args[len(args)-2:], " ")
			if name != "sacct" || sacct[key] == "" {
				return "", fmt.Errorf("no %s %s", name, key)
			}
			return sacct[key], nil
		},
		Request:  func(id string) ledger.Request { return ledger.Request{Actor: "test", ID: id} },
		Refused:  func(err error) bool { return errors.Is(err, ledger.ErrNotFound) || errors.Is(err, lien.ErrNotMember) },
		NotFound: func(err error) bool { return errors.Is(err, ledger.ErrNotFound) },
		Message:  func(err error) string { return err.Error() },
	}, &out
}

// TestSiteSettlesEveryRun: sync's logic on sacct -D's records of a job
// requeued twice, one whose node failed and one the bank cannot charge:
// each run charged once under its own job, a node failure as the site
// says, the report against Slurm's usage, and a job whose first run is
// before the period asked again whole.
func TestSiteSettlesEveryRun(t *testing.T) {
	at := func(min int) string {
		return time.Date(2026, 11, 28, 10, min, 0, 0, time.Local).Format("2006-01-02T15:04:05")
	}
	// A run is submitted when the one before it ends (its requeue), the
	// first when it starts here.
	submitted := map[int]int{11: 19, 12: 32}
	rec := func(id, account string, db, cpus, start, end int, state string) string {
		submit, ok := submitted[db]
		if !ok {
			submit = start
		}
		return fmt.Sprintf("%s|hpc1|%s|amy|debug|normal|billing=%d,cpu=%d,node=1|%d|10|%s|%s|%s|0:0|%d|%s", id, account, cpus, cpus, (end-start)*60, at(start), at(end), state, db, at(submit))
	}
	since := at(20)
	window := strings.Join([]string{SacctHeader(),
		rec("7", "lab1", 11, 2, 30, 32, "REQUEUED"), rec("7", "lab1", 12, 1, 33, 34, "COMPLETED"),
		rec("8", "lab1", 13, 1, 35, 36, "NODE_FAIL"), rec("9", "nope", 14, 1, 35, 36, "COMPLETED"),
		rec("10", "bad", 15, 1, 36, 37, "COMPLETED")}, "\n")
	// Job 7's first run was before the period: sync asks for it by id.
	whole := strings.Join([]string{SacctHeader(), rec("7", "lab1", 3, 1, 10, 19, "REQUEUED"),
		rec("7", "lab1", 11, 2, 30, 32, "REQUEUED"), rec("7", "lab1", 12, 1, 33, 34, "COMPLETED")}, "\n")
	b := &fakeBank{nodes: []string{"chem", "chem.lab1", "bad"}}
	site, out := testSite(b, map[string]string{"-E now": window, "-j 7": whole})
	site.NodeFail = NodeFailFree
	runs, err := site.Runs(context.Background(), "-S", since, "-E", "now")
	if err != nil {
		t.Fatal(err)
	}
	var report Report
	for _, r := range runs {
		res, err := site.SettleRun(context.Background(), r, false)
		if err != nil {
			t.Fatal(err)
		}
		report.Add(r, res)
	}
	for id, want := range map[string]int64{"7": 540, "7.r1": 240, "7.r2": 60} {
		if ch := b.charges[id]; len(ch) != 1 || ch[0].Amount.IntPart() != want {
			t.Errorf("job %s charged %+v, want one charge of %d", id, ch, want)
		}
	}
	if len(b.charges["8"]) != 0 {
		t.Errorf("a node failure was charged with NodeFailFree: %+v", b.charges["8"])
	}
	if report.Runs != 6 || report.Charged != 3 || report.Free != 1 || report.Unsettled != 2 || report.SlurmCPUSeconds != 1020 || report.ChargedCPUSeconds != 840 {
		t.Errorf("report = %+v", report)
	}
	if !strings.Contains(out.String(), "charged job 7 run 1 (REQUEUED, 120 s): 240 to chem.lab1") {
		t.Errorf("sync said:\n%s", out)
	}
	// Again, with node failures charged: only job 8 is new.
	out.Reset()
	site.NodeFail = NodeFailCharge
	for _, r := range runs {
		if _, err := site.SettleRun(context.Background(), r, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.TrimSpace(out.String()); got != "charged job 8 run 0 (NODE_FAIL, 60 s): 60 to chem.lab1" {
		t.Errorf("the second pass said:\n%s", got)
	}
	var printed bytes.Buffer
	report.Print(&printed, time.Now())
	if !strings.Contains(printed.String(), "short by 180 CPU-seconds") {
		t.Errorf("report:\n%s", printed.String())
	}
	file := filepath.Join(t.TempDir(), "ingot.prom")
	if err := WriteMetrics(file, "hpc1", report.Unsettled, true, time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(file); !strings.Contains(string(raw), "ingot_slurm_unsettled_jobs{cluster=\"hpc1\"} 2\n") || !strings.Contains(string(raw), "ingot_slurm_sync_timestamp_seconds{cluster=\"hpc1\"} 1700000000\n") {
		t.Errorf("metrics:\n%s", raw)
	}
}

// TestSubmitterVerdicts: submit-server's lines and their verdicts.
func TestSubmitterVerdicts(t *testing.T) {
	b := &fakeBank{nodes: []string{"chem", "chem.lab1", "bio"}, available: decimal.NewFromInt(1000)}
	site, _ := testSite(b, nil)
	sb := &Submitter{Bank: b, Machine: "hpc1", Refused: site.Refused, Message: site.Message}
	job := "user=amy\taccount=lab1\tmin-cpus=1\tnum-tasks=4294967294\tcpus-per-task=65534"
	for _, tc := range []struct{ line, want string }{
		{job + "\ttime-limit=10", "accept"},
		{job + "\ttime-limit=60", "refuse insufficient funds: project chem.lab1 needs 3600, 1000 available"},
		{"user=amy\taccount=nope\ttime-limit=1\tmin-cpus=1", `refuse not found: account "nope": the bank has no project of that name`},
		{"account=lab1\ttime-limit=1", "error slurm submit-server: the line names no uid or user"},
		{"user=amy\tbogus=1", `error slurm submit-server: unknown field "bogus"`},
		{"user=amy\tnoequals", `error slurm submit-server: field "noequals" is not NAME=VALUE`},
	} {
		if got := sb.LineVerdict(context.Background(), tc.line); !strings.HasPrefix(got, tc.want) {
			t.Errorf("LineVerdict(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	b.fallback = "bio"
	if got := sb.LineVerdict(context.Background(), job+"\ttime-limit=60"); got != "account bio" {
		t.Errorf("a job the fallback takes: %q", got)
	}
	// A project created after the names were read is found at once.
	b.nodes = append(b.nodes, "phys")
	if got := sb.LineVerdict(context.Background(), "user=amy\taccount=phys\ttime-limit=1\tmin-cpus=1"); got != "accept" {
		t.Errorf("a new project: %q", got)
	}
}

// TestSiteEpilog: the epilog of a requeued run charges it from sacct -D
// (its own run, the restart count less one), and the epilog of a run whose
// node failed charges it as failed, or nothing with NodeFailFree.
func TestSiteEpilog(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	at := func(d time.Duration) string { return now.Add(d).Format("2006-01-02T15:04:05") }
	squeue := func(id, state, restarts, reason string, start, end time.Duration) string {
		return strings.Join([]string{id, "amy", "lab1", "debug", "normal", state, "10:00", at(start), at(end), "0:00", "1", "1", "1",
			"cpu=1,node=1,billing=1", "N/A", "N/A", "N/A", "(null)", restarts, reason}, "|") + "|\n"
	}
	b := &fakeBank{nodes: []string{"chem", "chem.lab1"}}
	site, out := testSite(b, nil)
	var queue string
	site.Run = func(_ context.Context, name string, args ...string) (string, error) {
		switch name {
		case "squeue":
			return queue, nil
		case "sacct":
			return SacctHeader() + "\n" + fmt.Sprintf("5|hpc1|lab1|amy|debug|normal|billing=1,cpu=1,node=1|90|10|%s|%s|REQUEUED|0:0|40|%s", at(-2*time.Minute), at(-30*time.Second), at(-2*time.Minute)), nil
		}
		return "", fmt.Errorf("no %s", name)
	}
	// Requeued: pending again, its restart count the next run's.
	queue = squeue("5", "PENDING", "1", "BeginTime", 0, 10*time.Minute)
	h, err := site.ReadHook(context.Background(), "epilog", "5", "amy")
	if err != nil {
		t.Fatal(err)
	}
	if err := site.Epilog(context.Background(), &h, "0"); err != nil {
		t.Fatal(err)
	}
	if ch := b.charges["5"]; h.Run != 0 || len(ch) != 1 || ch[0].Amount.IntPart() != 90 {
		t.Errorf("the requeued run %d: charges %+v\n%s", h.Run, ch, out)
	}
	if !strings.Contains(out.String(), "ingot slurm epilog: job 5 run 0: requeued: charged 90 to chem.lab1 (requeued, 90 s)") {
		t.Errorf("the epilog said:\n%s", out)
	}
	// A node failure, the job not requeued: Reason=NodeDown.
	queue = squeue("6", "COMPLETING", "0", "NodeDown", -time.Minute, 0)
	site.NodeFail = NodeFailFree
	h, _ = site.ReadHook(context.Background(), "epilog", "6", "amy")
	if err := site.Epilog(context.Background(), &h, "0"); err != nil || len(b.charges["6"]) != 0 {
		t.Errorf("a node failure with NodeFailFree: %v %+v", err, b.charges["6"])
	}
	site.NodeFail = NodeFailCharge
	if err := site.Epilog(context.Background(), &h, "0"); err != nil || len(b.charges["6"]) != 1 || b.charges["6"][0].Amount.IntPart() != 60 {
		t.Errorf("a node failure charged: %v %+v", err, b.charges["6"])
	}
	if _, err := site.ReadHook(context.Background(), "epilog", "6", "bob"); err == nil || !strings.Contains(err.Error(), "$SLURM_JOB_USER is bob, squeue says amy") {
		t.Errorf("another user: %v", err)
	}
}
