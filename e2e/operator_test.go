//go:build linux

package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/client"
)

const smallPipeline = `
datasets:
  - {id: in, location: "/in/{dataid}"}
  - {id: out, location: "/out/{dataid}"}
jobs:
  - {id: j, inputs: [in], output: out, leaseSeconds: 2}
`

// outputHistory lists the OUTPUT transitions of one chunk as "FROM->TO by
// EXECUTOR (reason)".
func outputHistory(t *testing.T, s *server, dataset, dataid string) []string {
	t.Helper()
	var h []string
	for _, e := range s.events(t, client.EventFilter{Dataset: dataset, DataID: dataid}) {
		if e.Role != "OUTPUT" {
			continue
		}
		step := e.From + "->" + e.To + " by " + e.Executor
		if e.Reason != "" {
			step += " (" + e.Reason + ")"
		}
		h = append(h, step)
	}
	return h
}

// waitPid waits for a job process to write its pid to path.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 30*time.Second, "the job process to start", func() bool {
		raw, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(raw), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil
	})
	return pid
}

// TestOperatorScenarios: a runner whose claim an operator forces stops
// its job process; SIGTERM releases; exit codes; bad input is refused
// with a clear error and changes nothing.
func TestOperatorScenarios(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	s.ok(t, "apply", "-f", file("small.yaml", smallPipeline))
	s.ok(t, "publish", "--dataset", "in", "--range", "1..3")

	t.Run("forced claim stops the runner's job process", func(t *testing.T) {
		pidFile, finished := filepath.Join(dir, "pid1"), filepath.Join(dir, "finished1")
		runner := start(t, s.env, dir, "run", "--job", "j", "--dataid", "1", "--executor", "runner1", "--kill-grace", "2s", "--",
			"sh", "-c", `echo $$ >`+pidFile+`; sleep 30; touch `+finished)
		pid := waitPid(t, pidFile)
		r := s.ok(t, "force", "--job", "j", "--dataid", "1", "--executor", "operator")
		var forced struct{ Token, Executor string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &forced))
		require.Equal(t, "operator", forced.Executor)

		require.Equal(t, 1, runner.wait(t, 20*time.Second), runner.stderr.String())
		require.Contains(t, runner.stderr.String(), "lost the claim on j 1")
		eventually(t, 10*time.Second, "the job process to be stopped", func() bool { return !alive(pid) })
		_, err := os.Stat(finished)
		require.True(t, os.IsNotExist(err), "the job process must not run to its end")

		s.ok(t, "complete", "--token", forced.Token)
		require.Equal(t, []string{
			"NONE->RUNNING by runner1",
			"RUNNING->RUNNING by runner1 (superseded by force)",
			"RUNNING->RUNNING by operator",
			"RUNNING->READY by operator",
		}, outputHistory(t, s, "out", "1"), "claimed, superseded by force, completed once: the stale runner wrote nothing")
		// A repeated complete answers as the first did (a runner whose answer
		// was lost learns the truth); anything else on the ended claim is stale.
		s.ok(t, "complete", "--token", forced.Token)
		require.Len(t, outputHistory(t, s, "out", "1"), 4, "the repeat wrote nothing")
		r = s.run(t, "", nil, "fail", "--token", forced.Token, "--reason", "late")
		require.Equal(t, 4, r.code, "a completed claim cannot fail\n%s", r)
		require.Contains(t, r.stderr, "STALE_CLAIM")
	})

	t.Run("SIGTERM stops the job process and releases the claim", func(t *testing.T) {
		pidFile := filepath.Join(dir, "pid2")
		runner := start(t, s.env, dir, "run", "--job", "j", "--executor", "runner2", "--kill-grace", "2s", "--", "sh", "-c", `echo $$ >`+pidFile+`; exec sleep 30`)
		pid := waitPid(t, pidFile)
		require.NoError(t, runner.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 128+int(syscall.SIGTERM), runner.wait(t, 20*time.Second), runner.stderr.String())
		require.False(t, alive(pid), "the job process is stopped before the runner exits")
		h := outputHistory(t, s, "out", "2")
		require.Len(t, h, 2, "%q", h)
		require.Equal(t, "NONE->RUNNING by runner2", h[0])
		require.True(t, strings.HasPrefix(h[1], "RUNNING->NONE by runner2"), "released: %q", h)

		// Released, not failed: the next claim is attempt 1 again.
		r := s.ok(t, "next", "--job", "j")
		var claim struct {
			Token   string
			DataID  string `json:"dataid"`
			Attempt int
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &claim))
		require.Equal(t, "2", claim.DataID)
		require.Equal(t, 1, claim.Attempt)
		s.ok(t, "fail", "--token", claim.Token, "--reason", "disk full")
		r = s.ok(t, "status", "--job", "j")
		require.Contains(t, r.stdout, "disk full")
	})

	t.Run("exit codes of next and run", func(t *testing.T) {
		r := s.run(t, dir, nil, "run", "--job", "j", "--", "sh", "-c", `test "$CHUNKLOCK_DATAID" = 2 && test "$CHUNKLOCK_ATTEMPT" = 2 && test -n "$CHUNKLOCK_CLAIM_TOKEN"`)
		require.Equal(t, 0, r.code, "the failed chunk is retried first\n%s", r)
		r = s.run(t, dir, nil, "run", "--job", "j", "--executor", "runner3", "--", "sh", "-c", "echo bad input >&2; exit 7")
		require.Equal(t, 1, r.code, r.String())
		require.Equal(t, []string{"NONE->RUNNING by runner3", "RUNNING->FAILED by runner3 (exit status 7: bad input)"}, outputHistory(t, s, "out", "3"),
			"failed with the tail of stderr as the reason")

		r = s.run(t, dir, nil, "next", "--job", "j", "--dataid", "1")
		require.Equal(t, 3, r.code, r.String())
		require.Contains(t, r.stderr, "OUTPUT_LOCKED")
		s.ok(t, "hold", "--dataset", "out", "--dataid", "3")
		r = s.run(t, dir, nil, "next", "--job", "j")
		require.Equal(t, 3, r.code, "nothing is claimable: 1 and 2 are READY, 3 is on HOLD\n%s", r)
		require.Contains(t, r.stderr, "nothing to do")
		r = s.run(t, dir, nil, "run", "--job", "j", "--", "true")
		require.Equal(t, 3, r.code, r.String())
		r = s.run(t, dir, nil, "run", "--job", "j", "--loop", "--", "true")
		require.Equal(t, 0, r.code, r.String())
		require.Contains(t, r.stderr, "nothing left to do")
	})

	t.Run("bad input is refused and changes nothing", func(t *testing.T) {
		before, err := s.api.Datasets(t.Context())
		require.NoError(t, err)
		jobsBefore, err := s.api.Jobs(t.Context())
		require.NoError(t, err)

		r := s.run(t, dir, nil, "next", "--job", "nope")
		require.Equal(t, 1, r.code, r.String())
		require.Contains(t, r.stderr, `job "nope" not found`)
		r = s.run(t, dir, nil, "run", "--job", "nope", "--", "true")
		require.Equal(t, 1, r.code, r.String())
		require.Contains(t, r.stderr, `job "nope" not found`)

		for name, c := range map[string]struct{ yaml, want string }{
			"malformed":   {"datasets: [{id: x\n", "malformed.yaml"},
			"cycle":       {"datasets: [{id: a}, {id: b}]\njobs:\n  - {id: j1, inputs: [a], output: b}\n  - {id: j2, inputs: [b], output: a}\n", "cycle"},
			"two-writers": {"datasets: [{id: a}, {id: b}]\njobs:\n  - {id: j1, inputs: [a], output: b}\n  - {id: j2, inputs: [a], output: b}\n", "already produced"},
			// Fine on its own, but the server's job j produces out already.
			"conflict":      {"datasets: [{id: x}, {id: out}]\njobs:\n  - {id: j2, inputs: [x], output: out}\n", `already produced by job "j"`},
			"inline-secret": {"datasets: [{id: x, secret: hunter2}]\n", "never the secret itself"},
			"typo":          {"datasets: [{id: x, locaton: \"/x/{dataid}\"}]\n", "locaton"},
			"no-secret-var": {"datasets: [{id: x, secret: {env: CHUNKLOCK_E2E_UNSET}}, {id: y}]\njobs:\n  - {id: k, inputs: [x], output: y}\n", "CHUNKLOCK_E2E_UNSET is not set"},
		} {
			r := s.run(t, dir, nil, "apply", "-f", file(name+".yaml", c.yaml))
			require.Equal(t, 1, r.code, "%s: %s", name, r)
			require.Contains(t, r.stderr, c.want, name)
			require.Contains(t, r.stderr, "nothing was applied", name)
		}
		after, err := s.api.Datasets(t.Context())
		require.NoError(t, err)
		require.Equal(t, before, after)
		jobsAfter, err := s.api.Jobs(t.Context())
		require.NoError(t, err)
		require.Equal(t, jobsBefore, jobsAfter)

		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		dead := "http://" + l.Addr().String() // nothing listens there once closed
		l.Close()
		r = s.run(t, dir, []string{"CHUNKLOCK_URL=" + dead}, "next", "--job", "j")
		require.Equal(t, 1, r.code, r.String())
		require.Contains(t, r.stderr, "Is `chunklock serve` running at "+dead+"? Set --url or CHUNKLOCK_URL")
	})
}
