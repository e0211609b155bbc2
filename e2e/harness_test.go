//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/client"
)

// bin is the chunklock binary built by TestMain; binDir is on the PATH of
// every process the tests start, so that job scripts find chunklock.
var bin, binDir string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "chunklock-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir, bin = dir, filepath.Join(dir, "chunklock")
	args := []string{"build", "-o", bin}
	if os.Getenv("CHUNKLOCK_E2E_RACE") != "" {
		// The processes under test built with the race detector: slower.
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/chunklock")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building chunklock:", err)
		return 1
	}
	return m.Run()
}

// syncBuffer collects a process's output; safe to read while it writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a chunklock process started in the background.
type proc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// start runs chunklock args in the background with env added to the
// test's environment. The process is killed when the test ends if it is
// still running.
func start(t *testing.T, env []string, dir string, args ...string) *proc {
	t.Helper()
	return startProgram(t, env, dir, bin, args...)
}

// startProgram is start for any program (found on the PATH of the test,
// or a path relative to dir).
func startProgram(t *testing.T, env []string, dir, program string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(program, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(baseEnv(), env...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v did not exit within %s\nstdout:\n%s\nstderr:\n%s", p.cmd.Args, d, p.stdout, p.stderr)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("%v: %v", p.cmd.Args, p.err)
	return -1
}

// baseEnv is the test's environment without chunklock's variables, with
// the binary on the PATH.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CHUNKLOCK_") || strings.HasPrefix(kv, "PATH=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// result is what a finished chunklock command printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// server is a running `chunklock serve`.
type server struct {
	url     string
	env     []string // CHUNKLOCK_URL for the commands
	proc    *proc
	api     *client.Client
	dataDir string
}

// startServer runs `chunklock serve` on a free loopback port with the
// embedded store (etcd) in a fresh directory and a short reaper interval.
// The embedded store is given no address: it listens on a socket in its
// directory and a free port, so servers may run side by side.
func startServer(t *testing.T) *server {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "store")
	p := start(t, nil, "", "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir,
		"--reaper-interval", "200ms", "--log-level", "warn")
	re := regexp.MustCompile(`GraphQL at (http://\S+)/graphql`)
	deadline := time.Now().Add(60 * time.Second)
	for !re.MatchString(p.stderr.String()) {
		select {
		case <-p.done:
			t.Fatalf("chunklock serve exited: %v\n%s", p.err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("chunklock serve did not start within 60s:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	url := re.FindStringSubmatch(p.stderr.String())[1]
	t.Logf("server at %s; %s", url, regexp.MustCompile(`store: [^\n]*`).FindString(p.stderr.String()))
	api, err := client.New(url)
	require.NoError(t, err)
	s := &server{url: url, env: []string{"CHUNKLOCK_URL=" + url}, proc: p, api: api, dataDir: dataDir}
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Errorf("chunklock serve did not stop within 20s of SIGTERM")
		}
	})
	return s
}

// stop sends SIGTERM and returns the exit code (at most 20s later).
func (s *server) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, s.proc.cmd.Process.Signal(syscall.SIGTERM))
	return s.proc.wait(t, 20*time.Second)
}

// run runs chunklock args against the server, with env added, in dir, and
// waits (at most a minute) for it.
func (s *server) run(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	p := start(t, append(append([]string{}, s.env...), env...), dir, args...)
	code := p.wait(t, time.Minute)
	return result{code: code, stdout: p.stdout.String(), stderr: p.stderr.String()}
}

// ok runs chunklock args and requires exit 0.
func (s *server) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := s.run(t, "", nil, args...)
	require.Equal(t, 0, r.code, "chunklock %s\n%s", strings.Join(args, " "), r)
	return r
}

// events reads the whole event log.
func (s *server) events(t *testing.T, f client.EventFilter) []client.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := s.api.AllEvents(ctx, f)
	require.NoError(t, err)
	return evs
}

// eventually polls cond every 50ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive tells whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
