//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/client"
)

// python finds the interpreter that runs the example's Python job:
// CHUNKLOCK_PYTHON, else Debian's /usr/bin/python3, else python3 on the PATH.
// The chunklock Python client needs the standard library only, so the job
// runs from the repository's clients/python/src (PYTHONPATH). Without one
// the test skips, unless CHUNKLOCK_REQUIRE_PYTHON is set (scripts/test.sh and
// CI set it): then it fails.
func python(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("CHUNKLOCK_PYTHON"), "/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if err := exec.Command(p, "-c", "import sys; sys.exit(sys.version_info < (3, 9))").Run(); err == nil {
			return p
		}
	}
	if os.Getenv("CHUNKLOCK_REQUIRE_PYTHON") != "" {
		t.Fatalf("CHUNKLOCK_REQUIRE_PYTHON is set but no Python 3.9 or later was found (CHUNKLOCK_PYTHON, /usr/bin/python3, python3)")
	}
	t.Skip("no Python 3.9 or later (set CHUNKLOCK_PYTHON): the example's Python job is not run")
	return ""
}

// TestDailyPipelineFromPython runs the example pipeline with its transform
// job written in Python (jobs/transform.py, a worker of its own using the
// chunklock Python client) beside two `chunklock run` runners serving the
// other jobs, over 30 days: every chunk is produced exactly once, every
// orders-clean chunk by the Python worker, with the contents transform.sh
// writes, and every day's reconciliation agrees.
func TestDailyPipelineFromPython(t *testing.T) {
	py := python(t)
	s := startServer(t)
	root := t.TempDir()
	example, data, keys := filepath.Join(root, "example"), filepath.Join(root, "data"), filepath.Join(root, "keys")
	copyExample(t, example, data)
	env := []string{"SHOP_EXPORT_TOKEN=tok-123", "DAILY_ROOT=" + data}
	r := s.run(t, example, env, "apply", "-f", "pipeline.yaml", "--keys-dir", keys)
	require.Equal(t, 0, r.code, "%s", r)
	for _, script := range [][]string{{"make-raw.sh", "2026-01-01..2026-01-30"}, {"make-payments.sh", "2026-01-01..2026-01-30"}} {
		p := startProgram(t, append(append([]string{}, s.env...), env...), example, filepath.Join(example, script[0]), script[1:]...)
		require.Equal(t, 0, p.wait(t, time.Minute), "%s:\n%s", script[0], p.stderr)
	}

	pyEnv := append(append([]string{}, s.env...), "PYTHONPATH="+mustAbs(t, "../clients/python/src"))
	worker := startProgram(t, pyEnv, example, py, "jobs/transform.py", "--idle-wait", "6")
	var runners []*proc
	for range 2 {
		runners = append(runners, start(t, append(append([]string{}, s.env...), env...), example,
			"run", "--keys-dir", keys, "--job", "extract", "--job", "report", "--job", "reconcile", "--job", "rolling", "--job", "weekly", "--job", "by-region",
			"--loop", "--idle-wait", "6s", "--", "sh", "-c", `exec ./jobs/$CHUNKLOCK_JOB.sh`))
	}
	for _, p := range runners {
		require.Equal(t, 0, p.wait(t, 3*time.Minute), "runner:\n%s", p.stderr)
	}
	require.Equal(t, 0, worker.wait(t, time.Minute), "transform.py:\n%s", worker.stderr)
	require.Contains(t, worker.stderr.String(), "transform.py: nothing left to do: 30 completed")
	executor := regexp.MustCompile(`transform.py: executor (\S+)`).FindStringSubmatch(worker.stderr.String())
	require.NotNil(t, executor, worker.stderr.String())

	readyOnce(t, s, 6*30+5+3*30) // the six daily datasets (payments published), five weeks and 30 days of three regions
	for _, e := range s.events(t, client.EventFilter{Dataset: "orders-clean"}) {
		if e.Role == "OUTPUT" && e.To == "RUNNING" {
			require.Equal(t, executor[1], e.Executor, "orders-clean %s was claimed by the Python worker", e.DataID)
		}
	}
	for _, d := range dates("2026-01-01", 30) {
		got, err := os.ReadFile(filepath.Join(data, "orders-clean", "dt="+d, "customers.csv"))
		require.NoError(t, err)
		require.Equal(t, perCustomer(t, filepath.Join(data, "orders", "dt="+d, "orders.csv")), string(got), "orders-clean %s", d)
		sum, _ := rawTotals(t, filepath.Join(data, "shop", "orders-"+d+".csv"))
		got, err = os.ReadFile(filepath.Join(data, "reconciliation", d+".txt"))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("OK %s %d\n", d, sum), string(got))
	}
}

// readyOnce requires every OUTPUT chunk to have become READY exactly once,
// and want of them to have.
func readyOnce(t *testing.T, s *server, want int) {
	t.Helper()
	ready := map[string]int{}
	for _, e := range s.events(t, client.EventFilter{}) {
		if e.Role == "OUTPUT" && e.To == "READY" {
			ready[e.Dataset+"/"+e.DataID]++
		}
	}
	for k, n := range ready {
		require.Equal(t, 1, n, "%s became READY %d times", k, n)
	}
	require.Len(t, ready, want)
}

// perCustomer is what transform.sh writes for an orders chunk: per
// customer (in order), "day,customer,orders,cents".
func perCustomer(t *testing.T, orders string) string {
	t.Helper()
	raw, err := os.ReadFile(orders)
	require.NoError(t, err)
	type total struct{ n, cents int }
	per := map[string]*total{}
	day := ""
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(line, ",")
		require.Len(t, f, 4, line)
		cents, err := strconv.Atoi(f[3])
		require.NoError(t, err)
		if per[f[2]] == nil {
			per[f[2]] = &total{}
		}
		per[f[2]].n++
		per[f[2]].cents += cents
		day = f[0]
	}
	customers := make([]string, 0, len(per))
	for c := range per {
		customers = append(customers, c)
	}
	sort.Strings(customers)
	var b strings.Builder
	for _, c := range customers {
		fmt.Fprintf(&b, "%s,%s,%d,%d\n", day, c, per[c].n, per[c].cents)
	}
	return b.String()
}
