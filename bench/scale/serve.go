package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// serveProc is a `chunklock serve` child process with its default
// settings, on 127.0.0.1 (a port it picks), open (no tokens), its log
// kept in a file.
type serveProc struct {
	cmd      *exec.Cmd
	api      *api
	url      string        // http://127.0.0.1:port
	etcdURL  string        // the embedded etcd's client URL ("" on PostgreSQL)
	started  time.Duration // from the exec to the first 200 of /readyz
	logPath  string
	done     chan struct{}
	waitErr  error
	waitOnce sync.Once
}

var (
	graphqlAt = regexp.MustCompile(`GraphQL at (http://127\.0\.0\.1:\d+)/graphql`)
	etcdAt    = regexp.MustCompile(`etcd clients on (http://127\.0\.0\.1:\d+)`)
)

// startServer runs bin serve with args (the store's) and waits until it
// answers /readyz with 200, which is its start time.
func startServer(ctx context.Context, bin, logPath string, args ...string) (*serveProc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, args...)
	// A pipe of our own: Wait does not close it under the reader.
	stderr, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, w
	t0 := time.Now()
	err = cmd.Start()
	w.Close()
	if err != nil {
		stderr.Close()
		logf.Close()
		return nil, err
	}
	s := &serveProc{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	urls := make(chan [2]string, 1)
	go s.readLog(stderr, logf, urls)
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	select {
	case u := <-urls:
		s.url, s.etcdURL = u[0], u[1]
	case <-s.done:
		return nil, fmt.Errorf("chunklock serve ended at start (%v); its log: %s", s.waitErr, logPath)
	case <-time.After(10 * time.Minute):
		s.stop()
		return nil, fmt.Errorf("chunklock serve did not name its address within 10 minutes; its log: %s", logPath)
	}
	s.api = newAPI(s.url, 64)
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	s.started = time.Since(t0)
	return s, nil
}

// readLog copies the server's log to logf and sends the GraphQL and etcd
// URLs once the server has named them.
func (s *serveProc) readLog(r io.ReadCloser, logf *os.File, urls chan<- [2]string) {
	defer logf.Close()
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var etcd string
	sent := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logf, line)
		if m := etcdAt.FindStringSubmatch(line); m != nil {
			etcd = m[1]
		}
		if m := graphqlAt.FindStringSubmatch(line); m != nil && !sent {
			urls <- [2]string{m[1], etcd}
			sent = true
		}
	}
}

func (s *serveProc) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		code, _, err := s.api.get(ctx, "/readyz")
		if err == nil && code == 200 {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("chunklock serve ended before it was ready (%v); its log: %s", s.waitErr, s.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("chunklock serve was not ready (/readyz 200) within %s; its log: %s", readyWithin, s.logPath)
}

// readyWithin bounds a server's start: the embedded store reads its whole
// index at start, about 26 s a million chunks.
const readyWithin = 15 * time.Minute

// alive tells whether the process still runs.
func (s *serveProc) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// stop sends SIGINT and waits (SIGKILL after a minute).
func (s *serveProc) stop() {
	s.waitOnce.Do(func() {
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// memory reads the process's resident set now and at its peak.
func (s *serveProc) memory() (rss, peak int64) { return processMemory(s.cmd.Process.Pid) }

// processMemory reads a process's resident set now and at its peak
// (Linux; 0 elsewhere).
func processMemory(pid int) (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

// buildChunklock builds ./cmd/chunklock into dir (run from the repository
// root).
func buildChunklock(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "chunklock")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/chunklock")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", errors.New("building chunklock failed: run from the repository root, or give -server-bin")
	}
	return bin, nil
}
