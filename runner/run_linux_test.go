package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHelperRunner is not a test: TestRunnerDeathKillsProcess runs the test
// binary with RUNNER_HELPER_PIDFILE set to make it a runner to kill.
func TestHelperRunner(t *testing.T) {
	pidFile := os.Getenv("RUNNER_HELPER_PIDFILE")
	if pidFile == "" {
		return
	}
	b := setup(t)
	_, _ = Run(context.Background(), storeClient{b.store}, b.claim, Options{
		Command: []string{"sh", "-c", "echo $$ >" + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + " && exec sleep 60"},
		IsStale: isStale,
	})
	t.Fatal("the helper runner should have been killed")
}

// TestRunnerDeathKillsProcess: on Linux a job process does not outlive its
// runner.
func TestRunnerDeathKillsProcess(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperRunner$")
	helper.Env = append(os.Environ(), "RUNNER_HELPER_PIDFILE="+pidFile)
	require.NoError(t, helper.Start())
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for {
		raw, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
			require.NoError(t, err)
			break
		}
		require.True(t, time.Now().Before(deadline), "the helper's job process did not start")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		require.True(t, time.Now().Before(deadline), "job process %d outlived its killed runner", pid)
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive tells whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}
