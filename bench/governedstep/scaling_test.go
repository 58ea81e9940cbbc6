package governedstep

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/store/postgres"
	"github.com/jackc/pgx/v5"
)

// TestScaling runs the same campaign — M refund runs started through one
// process's API, each one governed step on PostgreSQL — with 1, 2 and 4
// `flrh serve` processes sharing one schema, and prints runs per second
// for each. Every run must end SUCCEEDED with exactly one mutation at the
// destination per refund; the figures are printed, never asserted.
//
//	cd bench && FLRH_BENCH_SCALING=1 FLRH_TEST_POSTGRES=postgres://... go test ./governedstep -run Scaling -v
func TestScaling(t *testing.T) {
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if os.Getenv("FLRH_BENCH_SCALING") == "" || dsn == "" {
		t.Skip("set FLRH_BENCH_SCALING=1 and FLRH_TEST_POSTGRES to run the multi-process scaling campaign")
	}
	runs := envInt("FLRH_BENCH_RUNS", 120)
	bin := filepath.Join(t.TempDir(), "flrh")
	build := exec.Command("go", "build", "-o", bin, "./cmd/flrh")
	build.Dir = filepath.Join("..", "..") // flrh's own module, not the bench module
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%d runs, one governed step each, --runners 4 per process\n%-9s %9s %10s  %s\n", runs, "processes", "runs/s", "wall", "runs finished per process")
	var base float64
	for _, procs := range []int{1, 2, 4} {
		rate, wall, owners := scalingCampaign(t, bin, dsn, procs, runs)
		if base == 0 {
			base = rate
		}
		fmt.Fprintf(&table, "%-9d %9.1f %10s  %v (%.2fx of one process)\n", procs, rate, wall.Round(time.Millisecond), owners, rate/base)
	}
	t.Log(table.String())
}

func scalingCampaign(t *testing.T, bin, dsn string, procs, runs int) (float64, time.Duration, map[string]int) {
	schema := fmt.Sprintf("bench_scale_%d_%d", procs, time.Now().UnixNano())
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	storeURL := u.String()
	st, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		st.Close()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			conn.Close(ctx)
		}
	}()
	sb, err := sandbox.New(sandbox.Options{MaxMutations: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dest := httptest.NewServer(sb)
	defer dest.Close()
	var bases []string
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGTERM)
			c.Wait()
		}
	}()
	for i := 0; i < procs; i++ {
		c := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--store", storeURL, "--runners", "4",
			"--destination", dest.URL+"/v1/effects", "--grace", "10s")
		c.Stderr = io.Discard
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		rd := bufio.NewReader(out)
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("serve did not announce itself: %v", err)
		}
		go io.Copy(io.Discard, rd)
		at := strings.Index(line, "http://")
		if at < 0 {
			t.Fatalf("serve said %q", line)
		}
		bases = append(bases, strings.TrimRight(strings.Fields(line[at:])[0], "/"))
	}
	start := time.Now()
	for i := 0; i < runs; i++ {
		id := fmt.Sprintf("s-%04d", i)
		body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":{"refunds":[{"id":"%s-r","amount":%d,"payee":"p-%s","reason":"damaged item"}]}}`,
			id, id, 10+i%80, id)
		resp, err := http.Post(bases[i%len(bases)]+"/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("start %s: %s %s", id, resp.Status, b)
		}
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		live, err := st.Live(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes: %d runs still live after 10 minutes", procs, len(live))
		}
		time.Sleep(20 * time.Millisecond)
	}
	wall := time.Since(start)
	owners := map[string]int{}
	for i := 0; i < runs; i++ {
		run, err := st.Run(ctx, fmt.Sprintf("s-%04d", i))
		if err != nil {
			t.Fatal(err)
		}
		if run.State != "SUCCEEDED" {
			t.Fatalf("%s ended %s", run.ID, run.State)
		}
		owners[run.Lease.Owner]++
	}
	if n := len(sb.Mutations()); n != runs {
		t.Fatalf("%d processes: the destination applied %d mutations for %d refunds", procs, n, runs)
	}
	return float64(runs) / wall.Seconds(), wall, owners
}
