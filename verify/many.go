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
//
// A store that reads several runs at once (ReadRunRecords) is asked for a
// batch of consecutive jobs' runs at a time, each run as Run and Check
// read it alone: a worker then holds one batch's records at a time. A
// store that reads them into memory lent to it (ReadRunRecordsReusing) is
// lent the memory of the worker's last batch, which it writes over: the
// worker is done with that batch, and its results hold none of its bytes.
func CheckMany(ctx context.Context, st store.Store, m *control.Machine, jobs []Job) ([]Checked, error) {
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	size := 1
	if _, ok := recordsReaderOf(st); ok {
		size = batchSize(len(jobs), workers)
	}
	return checkMany(ctx, st, m, jobs, workers, size, true)
}

// checkMany is CheckMany on the workers given, each taking size
// consecutive jobs at a time (read at once when size is above one); with
// taper, fewer towards the end (tapered).
func checkMany(ctx context.Context, st store.Store, m *control.Machine, jobs []Job, workers, size int, taper bool) ([]Checked, error) {
	if m == nil {
		m = control.Default()
	}
	rr, batched := recordsReaderOf(st)
	if !batched || size < 1 {
		size = 1
	}
	// A worker lends the store the memory its last batch's bodies were
	// read into, when the store that reads the batches takes it: the
	// batch's records are checked, and dropped, before the worker reads
	// the next (checkBatch), and nothing checkRecord returns holds a
	// record's bytes.
	reuser, reusing := rr.(reusingReader)
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
	// A batch's runs read at once, then checked one after the other; ids
	// is the worker's own buffer for their ids, mem the memory it lends
	// the store for their bodies.
	checkBatch := func(lo, hi int, ids []string, mem *[][]byte) bool {
		if size == 1 {
			check(lo)
			return errs[lo] == nil
		}
		ids = ids[:0]
		for _, j := range jobs[lo:hi] {
			ids = append(ids, j.RunID)
		}
		var recs []store.RunRecord
		var rerrs []error
		if reusing {
			recs, rerrs = reuser.ReadRunRecordsReusing(ctx, ids, true, mem)
		} else {
			recs, rerrs = rr.ReadRunRecords(ctx, ids, true)
		}
		for i := lo; i < hi; i++ {
			if errs[i] = rerrs[i-lo]; errs[i] == nil {
				rec := fromRunRecord(st, recs[i-lo], withRun|withEffects)
				recs[i-lo] = store.RunRecord{} // the batch's records are held no longer than checked
				out[i].Report, out[i].Replay, errs[i] = checkRecord(ctx, rec, m, jobs[i].Workflow, jobs[i].RunID)
			}
			if errs[i] != nil {
				return false // the jobs after the first failure are not checked
			}
		}
		return true
	}
	// Batches are handed out in order and none is taken after a job has
	// failed: every job before the first failure therefore ran, and the
	// first error in order is the one the sequential loop would have met.
	var (
		mu     sync.Mutex
		next   int
		failed bool
		wg     sync.WaitGroup
	)
	take := func() (int, int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed || next == len(jobs) {
			return 0, 0, false
		}
		lo, n := next, size
		if taper {
			n = tapered(len(jobs)-next, workers, size)
		}
		next = min(next+n, len(jobs))
		return lo, next, true
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, 0, size)
			mem := takeLent()
			defer lent.Put(mem)
			for {
				lo, hi, ok := take()
				if !ok {
					return
				}
				if !checkBatch(lo, hi, ids, mem) {
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

// lent holds the memory workers lent a store's reusing read, for the
// workers of the next CheckMany to lend again: once a worker has checked
// its last batch, nothing holds the bytes read into it.
var lent sync.Pool // of *[][]byte

// takeLent returns memory to lend a store's reusing read: a worker's
// before it, or none yet.
func takeLent() *[][]byte {
	if m, ok := lent.Get().(*[][]byte); ok {
		return m
	}
	return new([][]byte)
}

// batchSize is how many consecutive jobs a worker takes at once from a
// store that reads several runs at once: up to a statement's worth
// (sixteen runs), but small enough that every worker gets several
// batches to keep it busy until the end.
func batchSize(jobs, workers int) int {
	return max(1, min(16, jobs/(4*max(workers, 1))))
}

// tapered is how many of the jobs left a worker takes at once: up to size,
// and no more than a share of what is left that keeps every worker busy
// until the end. Batches of size to the last would leave a worker idle for
// up to a whole batch while another checks the last one (with sixteen
// runs a batch and two workers, a twelfth of a pass of 200 runs); taken
// in shares of a half of each worker's part of what is left, the last
// batches are of one run.
func tapered(left, workers, size int) int {
	share := max(1, workers) * 2
	return max(1, min(size, (left+share-1)/share))
}
