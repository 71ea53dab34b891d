package slurm

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseQueue(t *testing.T) {
	raw, err := os.ReadFile("testdata/squeue.txt")
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]QueueJob{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		j, err := ParseQueue(line+"\n", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		jobs[j.ID] = j
	}
	one := jobs["1"]
	if one.Restarts != 1 || one.Reason != "BeginTime" || one.User != "root" || one.Account != "" || one.QOS != "" || one.Partition != "debug" || one.State != "PENDING" || one.TimeLimit != 300 || one.GPUs != 1 || one.CPUs != 1 {
		t.Errorf("job 1 = %+v", one)
	}
	four := jobs["4"]
	if four.TimeLimit != 26*3600 || four.GPUs != 1 || four.CPUs != 2 || four.Used != 3 ||
		!four.End.Equal(time.Date(2026, 11, 26, 13, 59, 58, 0, time.UTC)) || four.State != "COMPLETED" {
		t.Errorf("job 4 = %+v", four)
	}
	if r := jobs["2"].Resources(); r.MemoryMB != 20 || r.Processors != 2 || r.Nodes != 1 {
		t.Errorf("job 2 resources = %+v", r)
	}
	for _, f := range []string{"Name", "Comment", "Command", "WorkDir"} {
		if strings.Contains(","+QueueFormat(), ","+f+":") {
			t.Errorf("QueueFormat reads %s, which the job's user writes", f)
		}
	}
	for _, bad := range []struct{ out, says string }{
		{"", "not one job"},
		{"1|root|\n", "not one job"},
		{strings.Repeat("1|", 20) + "\n" + strings.Repeat("1|", 20), "not one job"},
		{"1|root|a|debug|normal|RUNNING|5:99|N/A|N/A|0:00|1|1|1|cpu=1|N/A|N/A|N/A|(null)|0|None|", `TimeLimit "5:99"`},
		{"1|root|a|debug|normal|RUNNING|5:00|N/A|N/A|0:00|x|1|1|cpu=1|N/A|N/A|N/A|(null)|0|None|", `NumCPUs "x"`},
		{"1|root|a|debug|normal|RUNNING|5:00|N/A|N/A|0:00|1|1|1|cpu=1|gres:gpu:?|N/A|N/A|(null)|0|None|", "not a GPU count"},
	} {
		if _, err := ParseQueue(bad.out, time.UTC); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("ParseQueue(%q) error %v, want %q", bad.out, err, bad.says)
		}
	}
}

func TestDuration(t *testing.T) {
	for in, want := range map[string]int64{"5:00": 300, "0:20": 20, "1:00:00": 3600, "1-02:00:00": 93600, "30": 1800, "UNLIMITED": 0} {
		if got, err := Duration("t", in); got != want || err != nil {
			t.Errorf("Duration(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1-5:00", "5:60", "-1", "1:2:3:4", "x"} {
		if _, err := Duration("t", bad); err == nil {
			t.Errorf("Duration(%q) was read", bad)
		}
	}
}

func FuzzParseQueue(f *testing.F) {
	raw, err := os.ReadFile("testdata/squeue.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, out string) {
		j, err := ParseQueue(out, time.UTC)
		if err != nil {
			return
		}
		if j.TimeLimit < 0 || j.Used < 0 || j.CPUs < 0 || j.GPUs < 0 || j.ID == "" {
			t.Errorf("ParseQueue(%q) = %+v", out, j)
		}
	})
}

// The line is what `scontrol -o show reservation` printed on Debian's 22.05
// for `scontrol create reservation ReservationName=r1 StartTime=now
// Duration=10 Nodes=ALL Accounts=lab1 Users=root`.
const reservationSample = "ReservationName=r1 StartTime=2026-11-26T14:32:44 EndTime=2026-11-26T14:42:44 Duration=00:10:00 Nodes=vm NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=SPEC_NODES,ALL_NODES TRES=cpu=2 Users=root Groups=(null) Accounts=lab1 Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n"

func TestParseReservations(t *testing.T) {
	rs, err := ParseReservations(reservationSample+strings.Replace(reservationSample, "Accounts=lab1", "Accounts=lab1,lab2", 1), time.UTC)
	if err != nil || len(rs) != 2 {
		t.Fatalf("ParseReservations = %+v, %v", rs, err)
	}
	r := rs[0]
	if r.Name != "r1" || r.CPUs != 2 || r.ChargeAccount() != "lab1" || len(r.Users) != 1 || r.Users[0] != "root" || r.End.Sub(r.Start) != 10*time.Minute || r.State != "ACTIVE" {
		t.Errorf("reservation = %+v", r)
	}
	if rs[1].ChargeAccount() != "" {
		t.Errorf("a reservation of two accounts is charged to %q", rs[1].ChargeAccount())
	}
	if rs, err := ParseReservations("No reservations in the system\n", time.UTC); err != nil || len(rs) != 0 {
		t.Errorf("none: %v %v", rs, err)
	}
	if _, err := ParseReservations("ReservationName=r StartTime=soon", time.UTC); err == nil {
		t.Error("a reservation with a bad start was read")
	}
}

func FuzzParseReservations(f *testing.F) {
	f.Add(reservationSample)
	f.Add("No reservations in the system")
	f.Fuzz(func(t *testing.T, out string) {
		rs, err := ParseReservations(out, time.UTC)
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.Name == "" || r.CPUs < 0 {
				t.Errorf("ParseReservations(%q) = %+v", out, r)
			}
		}
	})
}
