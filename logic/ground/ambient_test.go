package ground

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The frozen digests reproduce in fresh processes with a different time
// zone, locale, working directory and environment: nothing ambient reaches
// the kernel. (Go also randomizes map iteration in every process.)
func TestAmbientIndependence(t *testing.T) {
	if testing.Short() {
		t.Skip("starts test processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no test binary path:", err)
	}
	for i, env := range [][]string{
		{"TZ=Pacific/Kiritimati", "LANG=tr_TR.UTF-8", "LC_ALL=tr_TR.UTF-8", "HOME=/nonexistent"},
		{"TZ=America/St_Johns", "LANG=C", "GOGC=5", "FLRH_UNRELATED=1"},
	} {
		cmd := exec.Command(exe, "-test.run=^(TestGoldenFilePins|TestFrozenSuccessDigests|TestFrozenSequenceDigests)$", "-test.count=1", "-test.v")
		cmd.Env = env
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("process %d: %v\n%s", i, err, out)
		}
		for _, name := range []string{"TestGoldenFilePins", "TestFrozenSuccessDigests", "TestFrozenSequenceDigests"} {
			if !strings.Contains(string(out), "--- PASS: "+name) {
				t.Errorf("process %d did not pass %s:\n%s", i, name, out)
			}
		}
	}
}
