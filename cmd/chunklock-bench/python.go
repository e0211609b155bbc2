package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/bench"
)

// pythonResult is what the Python client's benchmark (clients/python/bench/cycles.py)
// prints.
type pythonResult struct {
	Cycles        int     `json:"cycles"`
	Seconds       float64 `json:"seconds"`
	FindP50MS     float64 `json:"find_p50_ms"`
	FindP99MS     float64 `json:"find_p99_ms"`
	CompleteP50MS float64 `json:"complete_p50_ms"`
	CompleteP99MS float64 `json:"complete_p99_ms"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	MaxRSSKiB     int64   `json:"maxrss_kib"`
	Connections   int     `json:"connections"`
}

// runPython measures the Python client as the graphql row measures the Go
// client: a fresh pipeline of c.chunks chunks, drained by R threads of one
// Python process doing findNext → complete against the same serve process.
// Its cpu column is the Python process's CPU time.
func runPython(ctx context.Context, c config, st backends.Store, srv *serveProcess, r int) (row, error) {
	prefix := fmt.Sprintf("b%d-python-r%d", time.Now().Unix()%100000, r)
	fmt.Fprintf(os.Stderr, "python R=%d: publishing %d chunks...\n", r, c.chunks)
	p, err := bench.SetupLimited(ctx, st, prefix, c.chunks, c.limits, os.Stderr)
	if err != nil {
		return row{}, err
	}
	src, err := filepath.Abs(filepath.Join("clients", "python", "src"))
	if err != nil {
		return row{}, err
	}
	cmd := exec.CommandContext(ctx, c.python, c.pyScript, "--url", srv.url, "--job", p.Job,
		"--runners", strconv.Itoa(r), "--select", c.pySelect)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	cmd.Stderr = os.Stderr
	srv0, db0, m0 := processCPU(srv.cmd.Process.Pid), postgresCPU(), readMachineTimes()
	out, err := cmd.Output()
	if err != nil {
		return row{}, fmt.Errorf("python benchmark (%s %s; run from the repository root): %w", c.python, c.pyScript, err)
	}
	var pr pythonResult
	if err := json.Unmarshal(out, &pr); err != nil {
		return row{}, fmt.Errorf("python benchmark: unexpected output %q: %w", out, err)
	}
	if pr.Cycles != p.Chunks {
		return row{}, fmt.Errorf("python benchmark: drained %d of %d chunks", pr.Cycles, p.Chunks)
	}
	fmt.Fprintf(os.Stderr, "python R=%d: %d cycles in %.2fs, client peak RSS %.1f MiB, %d connections\n",
		r, pr.Cycles, pr.Seconds, float64(pr.MaxRSSKiB)/1024, pr.Connections)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	res := bench.Result{Runners: r, Cycles: pr.Cycles, Elapsed: time.Duration(pr.Seconds * float64(time.Second)),
		FindNext: bench.Latencies{P50: ms(pr.FindP50MS), P99: ms(pr.FindP99MS), N: pr.Cycles},
		Complete: bench.Latencies{P50: ms(pr.CompleteP50MS), P99: ms(pr.CompleteP99MS), N: pr.Cycles}}
	rw := row{api: "python", res: res, rss: srv.peakRSS(), cpu: time.Duration(pr.CPUSeconds * float64(time.Second)),
		srvCPU: processCPU(srv.cmd.Process.Pid) - srv0, machine: readMachineTimes().since(m0)}
	if c.backend == "postgres" && db0 > 0 {
		rw.dbCPU = postgresCPU() - db0
	}
	return rw, nil
}
