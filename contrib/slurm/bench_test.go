package slurm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBenchSlurmSubmit is `make bench-slurm` (skipped otherwise: it takes
// minutes): submission throughput of the same Slurm with the bank's
// submit path installed (job_submit.lua asking `ingot slurm
// submit-server`, which quotes each job with the bank) and without any bank
// hook (a job_submit.lua that accepts every job, so that only the bank's
// work differs; slurmctld reads the file again when it changes). Four
// submitters run `sbatch --hold` in parallel, 500 jobs each way in rounds
// that alternate (in turn first and last), so that both see the same
// machine. It prints both
// rates, their ratio (the bar is 0.8) and the p99 of one sbatch; and, for
// comparison, the same with job_submit.lua starting `ingot slurm submit`
// for each job, as it does when no submit server answers.
func TestBenchSlurmSubmit(t *testing.T) {
	if os.Getenv("INGOT_BENCH_SLURM") == "" {
		t.Skip("make bench-slurm runs it (INGOT_BENCH_SLURM=1)")
	}
	e := newEndToEnd(t)
	c := e.cluster
	e.ingot("deposit", "chem", "1000000000")
	bank, err := os.ReadFile(filepath.Join(c.Dir, "job_submit.lua"))
	if err != nil {
		t.Fatal(err)
	}
	none := []byte("function slurm_job_submit(job_desc, part_list, submit_uid)\n  return slurm.SUCCESS\nend\n" +
		"function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n  return slurm.SUCCESS\nend\nreturn slurm.SUCCESS\n")
	const submitters, perWay, rounds = 4, 500, 5 // 25 jobs a submitter a round
	// For comparison, not for the bar: the script without the server, so
	// that it starts `ingot slurm submit` for each job.
	popen := []byte(strings.Replace(string(bank), "local submit_socket = \""+e.submitSocket+"\"", "local submit_socket = \"\"", 1))
	if string(popen) == string(bank) {
		t.Fatal("job_submit.lua has no submit_socket line to blank")
	}
	ways := []struct {
		name string
		lua  []byte
	}{{"without a bank hook", none}, {"with the bank's submit path", bank}, {"with a process per job", popen}}
	type result struct {
		jobs      int
		took      time.Duration
		latencies []time.Duration
	}
	results := make([]result, len(ways))
	for round := range rounds {
		order := []int{0, 1, 2}
		if round%2 == 1 {
			slices.Reverse(order) // neither way always first
		}
		for _, w := range order {
			way := ways[w]
			if err := os.WriteFile(filepath.Join(c.Dir, "job_submit.lua"), way.lua, 0o644); err != nil {
				t.Fatal(err)
			}
			// One job first, not counted: slurmctld reads the script anew.
			if _, err := c.Submit("--hold", "-A", "lab1", "-t", "1", "-n", "1", "--wrap", "true"); err != nil {
				t.Fatalf("%s: %v", way.name, err)
			}
			n := perWay / rounds / submitters
			var mu sync.Mutex
			var wg sync.WaitGroup
			var failed error
			begin := time.Now()
			for range submitters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						start := time.Now()
						_, err := c.Submit("--hold", "-A", "lab1", "-t", "1", "-n", "1", "--wrap", "true")
						took := time.Since(start)
						mu.Lock()
						if err != nil && failed == nil {
							failed = err
						}
						results[w].latencies = append(results[w].latencies, took)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			results[w].took += time.Since(begin)
			results[w].jobs += n * submitters
			if failed != nil {
				t.Fatalf("%s, round %d: %v", way.name, round, failed)
			}
		}
		// Held jobs stay in the controller: cancelled between rounds, so
		// that both ways see a queue of the same size.
		if _, err := c.Run("scancel", "-u", "root", "-t", "PENDING"); err != nil {
			t.Fatal(err)
		}
	}
	rate := func(r result) float64 { return float64(r.jobs) / r.took.Seconds() }
	p99 := func(r result) time.Duration {
		l := slices.Clone(r.latencies)
		slices.Sort(l)
		return l[(len(l)*99+99)/100-1]
	}
	var report strings.Builder
	for w, way := range ways {
		fmt.Fprintf(&report, "%-30s %4d jobs in %6.2f s: %6.1f submissions/s, p99 of one sbatch %v\n",
			way.name, results[w].jobs, results[w].took.Seconds(), rate(results[w]), p99(results[w]).Round(time.Millisecond))
	}
	ratio := rate(results[1]) / rate(results[0])
	fmt.Fprintf(&report, "ratio (with / without): %.2f (bar 0.80)\n", ratio)
	fmt.Print(report.String())
	t.Log("\n" + report.String())
	if ratio < 0.8 {
		t.Errorf("the bank's submit path keeps %.2f of Slurm's submission rate, under the bar of 0.8", ratio)
	}
}
