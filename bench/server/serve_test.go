package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/store/sqlite"
)

// flrh serve as a process: it starts with its defaults in a fresh
// directory, answers the API, and on SIGTERM exits 0 having released the
// leases of the runs it held, so another process takes them over at once.
func TestServeProcessShutsDownGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the flrh binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "flrh")
	build := exec.Command("go", "build", "-o", bin, "./cmd/flrh")
	build.Dir = filepath.Join("..", "..") // the main module's root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--lease-ttl", "10m")
	cmd.Dir = dir
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatal("serve printed nothing")
	}
	first := lines.Text()
	i := strings.Index(first, "http://")
	if i < 0 {
		t.Fatalf("no URL in %q", first)
	}
	base := strings.TrimSuffix(strings.Fields(first[i:])[0], "/")

	body := `{"workflow":"refund-agent","run_id":"big","input":{"refunds":[{"id":"r-1","amount":900,"payee":"bob","reason":"x"}]}}`
	resp, err := http.Post(base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("start: %v %v", err, resp)
	}
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/runs/big")
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Waiting []any `json:"waiting"`
		}
		json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if len(page.Waiting) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never waited for approval")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM", err)
	}
	if len(rest) == 0 || rest[len(rest)-1] != "flrh serve: stopped" {
		t.Fatalf("after SIGTERM it printed %q", rest)
	}
	// The lease was released: another owner acquires it at once, although
	// the server's lease would have lasted ten minutes.
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.AcquireLease(context.Background(), "big", "another-process", time.Minute); err != nil {
		t.Fatalf("the run's lease was not released: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "flrh.db")); err != nil {
		t.Fatal(fmt.Errorf("the default store was not created in the working directory: %w", err))
	}
}
