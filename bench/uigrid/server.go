package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// build compiles chunklock into dir.
func build(dir string) (string, error) {
	bin := filepath.Join(dir, "chunklock")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/chunklock")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building chunklock: %w", err)
	}
	return bin, nil
}

// server is a `chunklock serve` process.
type server struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	url    string
}

// startServer runs chunklock serve on a free port of 127.0.0.1, open, on
// storeURL ("" for the embedded store in dataDir).
func startServer(ctx context.Context, bin, dataDir, storeURL string) (*server, error) {
	ctx, cancel := context.WithCancel(ctx)
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "warn"}
	if storeURL != "" {
		args = append(args, "--store", storeURL)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	s := &server{cmd: cmd, cancel: cancel}
	if s.url, err = serverURL(stderr); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) stop() {
	s.cancel()
	_ = s.cmd.Wait()
}

var urlRe = regexp.MustCompile(`playground at (http://127\.0\.0\.1:\d+)`)

// serverURL reads the server's log until it names its address, then
// keeps draining it.
func serverURL(stderr interface{ Read([]byte) (int, error) }) (string, error) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := urlRe.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], nil
		}
	}
	return "", fmt.Errorf("chunklock serve ended before naming its address")
}

// cpu is the CPU time the process has used (user + system), from
// /proc/<pid>/stat: ten milliseconds resolution.
func (s *server) cpu() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("reading /proc/%d/stat: %q", s.cmd.Process.Pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}

// gql runs one operation and returns its data.
func gql(base, query string, vars map[string]any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return post(base, body)
}

// post sends a GraphQL request body as it is.
func post(base string, body []byte) (json.RawMessage, error) {
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage            `json:"data"`
		Errors []struct{ Message string } `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, len(out.Errors))
		for i, e := range out.Errors {
			msgs[i] = e.Message
		}
		return out.Data, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return out.Data, nil
}
