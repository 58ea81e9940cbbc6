package verify

import (
	"context"
	"runtime"
	"sync"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Job names a run to check and the workflow to replay it with (nil:
// verify only).
type Job struct {
	RunID    string
	Workflow runner.Workflow
}

// Checked is what checking one Job found: Run's report, and Replay's when
// the job named a workflow.
type Checked struct {
	Report *Report
	Replay *ReplayReport
}

// Many verifies the runs ids as Run does, several at a time, and returns
// their reports in the order of ids (on an error, those before the first
// run that failed, as CheckMany does).
func Many(ctx context.Context, st store.Store, m *control.Machine, ids []string) ([]*Report, error) {
	jobs := make([]Job, len(ids))
	for i, id := range ids {
		jobs[i].RunID = id
	}
	out, err := CheckMany(ctx, st, m, jobs)
	reps := make([]*Report, len(out))
	for i, c := range out {
		reps[i] = c.Report
	}
	return reps, err
}

// CheckMany checks every job, as Run and (with a workflow) Check do, on as
// many workers as GOMAXPROCS allows, and returns the results in the order
// of jobs: the same reports, in the same order, as checking one job after
// the other. Runs share nothing but the store, whose reads are safe to
// make at once. If any job fails with an error, CheckMany returns the
// error of the first such job in order, as the sequential loop would, with
// the results of the jobs before it.
func CheckMany(ctx context.Context, st store.Store, m *control.Machine, jobs []Job) ([]Checked, error) {
	if m == nil {
		m = control.Default()
	}
	out := make([]Checked, len(jobs))
	errs := make([]error, len(jobs))
	check := func(i int) {
		j := jobs[i]
		if j.Workflow == nil {
			out[i].Report, errs[i] = Run(ctx, st, m, j.RunID)
			return
		}
		out[i].Report, out[i].Replay, errs[i] = Check(ctx, st, m, j.Workflow, j.RunID)
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	// Jobs are handed out in order and none is taken after one has failed:
	// every job before the first failure therefore ran, and the first
	// error in order is the one the sequential loop would have met.
	var (
		mu     sync.Mutex
		next   int
		failed bool
		wg     sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed || next == len(jobs) {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				check(i)
				if errs[i] != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out[:i], err
		}
	}
	return out, nil
}
