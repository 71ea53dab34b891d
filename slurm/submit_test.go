package slurm

import (
	"strings"
	"testing"
)

// The job descriptions below are those spec/slurm.md saw job_submit.lua
// receive for each command.
func TestSubmissionRequest(t *testing.T) {
	const unsetNum, unsetTasks, unsetPerTask = "4294967294", "4294967294", "65534"
	for _, tc := range []struct {
		name string
		s    Submission
		// want
		seconds, cpus, gpus, memory int64
		err                         string
	}{
		{name: "sbatch -n 4 -t 10", s: Submission{TimeLimit: "10", MinCPUs: "4", NumTasks: "4", CPUsPerTask: unsetPerTask, MinNodes: unsetNum, MinMemory: "18446744073709551616"}, seconds: 600, cpus: 4},
		{name: "sbatch -c 2 -t 1:00:00", s: Submission{TimeLimit: "60", MinCPUs: "2", NumTasks: unsetTasks, CPUsPerTask: "2"}, seconds: 3600, cpus: 2},
		{name: "srun -n1 true, partition default 30", s: Submission{TimeLimit: unsetNum, PartitionDefaultTime: unsetNum, PartitionMaxTime: "30", MinCPUs: "1", NumTasks: "1"}, seconds: 1800, cpus: 1},
		{name: "srun -n1 true, MaxTime=INFINITE", s: Submission{TimeLimit: unsetNum, PartitionDefaultTime: unsetNum, PartitionMaxTime: "4294967295", MinCPUs: "1"}, err: "no time limit"},
		{name: "-t UNLIMITED", s: Submission{TimeLimit: "4294967295", MinCPUs: "1"}, err: "time_limit is UNLIMITED"},
		{name: "no limits at all", s: Submission{MinCPUs: "1"}, err: "no time limit and its partition no default"},
		{name: "--gres=gpu:2 on 2 nodes", s: Submission{TimeLimit: "5", MinCPUs: "2", MinNodes: "2", TRESPerNode: "gres:gpu:2"}, seconds: 300, cpus: 2, gpus: 4},
		{name: "--gpus=a100:3", s: Submission{TimeLimit: "5", MinCPUs: "1", TRESPerJob: "gres/gpu:a100:3"}, seconds: 300, cpus: 1, gpus: 3},
		{name: "--gpus-per-task=1 -n 3", s: Submission{TimeLimit: "5", MinCPUs: "3", NumTasks: "3", TRESPerTask: "gres/gpu:1"}, seconds: 300, cpus: 3, gpus: 3},
		{name: "--mem=2000", s: Submission{TimeLimit: "5", MinCPUs: "1", MinMemory: "2000"}, seconds: 300, cpus: 1, memory: 2000},
		{name: "--mem-per-cpu=100 -n 4", s: Submission{TimeLimit: "5", MinCPUs: "4", NumTasks: "4", MinMemory: "9223372036854775908"}, seconds: 300, cpus: 4, memory: 400},
		{name: "(null) fields", s: Submission{TimeLimit: "5", MinCPUs: "1", Account: "(null)", QOS: "(null)", TRESPerNode: "(null)"}, seconds: 300, cpus: 1},
		{name: "absurd time", s: Submission{TimeLimit: "99999999999", MinCPUs: "1"}, err: "beyond any job"},
		{name: "absurd GPUs", s: Submission{TimeLimit: "5", MinCPUs: "1", TRESPerNode: "gres:gpu:99999999999"}, err: "beyond any job"},
		{name: "garbled GPUs", s: Submission{TimeLimit: "5", MinCPUs: "1", TRESPerNode: "gres:gpu:x:y:z"}, err: "not a GPU count"},
		{name: "negative CPUs", s: Submission{TimeLimit: "5", MinCPUs: "-4"}, err: "min_cpus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.s.Request()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.WallclockLimitSeconds != tc.seconds || r.Processors != tc.cpus || r.GPUs != tc.gpus || r.MemoryMB != tc.memory || r.QOS != "" && tc.s.QOS == "(null)" {
				t.Errorf("request = %+v; want %d s, %d CPUs, %d GPUs, %d MB", r, tc.seconds, tc.cpus, tc.gpus, tc.memory)
			}
		})
	}
}

func TestNodeFor(t *testing.T) {
	nodes := []string{"chem", "chem.lab1", "bio", "bio.lab2", "phys.lab2", "lab3"}
	for _, tc := range []struct{ account, want, err string }{
		{"chem", "chem", ""}, {"lab1", "chem.lab1", ""}, {"chem.lab1", "chem.lab1", ""}, {"lab3", "lab3", ""},
		{"lab2", "", "several projects of that name (bio.lab2, phys.lab2)"}, {"nope", "", "no project of that name"},
	} {
		got, err := NodeFor(tc.account, nodes)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("NodeFor(%s) = %q, %v; want %q, %q", tc.account, got, err, tc.want, tc.err)
		}
	}
	if SlurmName("chem.lab1") != "lab1" || SlurmName("bio") != "bio" {
		t.Error("SlurmName")
	}
}

func FuzzSubmissionRequest(f *testing.F) {
	f.Add("10", "4", "4", "65534", "4294967294", "18446744073709551614", "gres:gpu:1", "")
	f.Add("4294967294", "1", "1", "2", "2", "9223372036854775908", "", "gres/gpu:a100:3")
	f.Fuzz(func(t *testing.T, limit, cpus, tasks, perTask, nodes, memory, perNode, perJob string) {
		s := Submission{TimeLimit: limit, PartitionMaxTime: "60", MinCPUs: cpus, NumTasks: tasks, CPUsPerTask: perTask, MinNodes: nodes, MinMemory: memory, TRESPerNode: perNode, TRESPerJob: perJob}
		r, err := s.Request()
		if err != nil {
			return
		}
		if r.WallclockLimitSeconds <= 0 || r.Processors < 1 || r.GPUs < 0 || r.MemoryMB < 0 || r.Nodes < 0 {
			t.Errorf("%+v gave %+v", s, r)
		}
	})
}
