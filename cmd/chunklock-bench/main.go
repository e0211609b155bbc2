// Command chunklock-bench measures claim throughput and latency: R
// concurrent runners doing findNext → complete cycles, directly against a
// Store or through the GraphQL API of a real `chunklock serve` process, next
// to the raw write limit of the same store and, on PostgreSQL, River's
// fetch → complete loop.
//
//	go run ./cmd/chunklock-bench -backend postgres -runners 1,4,16,64
//	go run ./cmd/chunklock-bench -backend etcd -api graphql -runners 16
//	go run ./cmd/chunklock-bench -backend etcd -api graphql -runners 16 -python /usr/bin/python3
//
// Figures go to standard output as a table; progress goes to standard error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/postgres"
	"github.com/chunklock/chunklock/bench"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

type config struct {
	backend     string
	api         string
	runners     []int
	chunks      int
	dsn         string
	baseline    time.Duration
	river       bool
	riverDir    string
	serverBin   string
	keepWorkdir bool
	cpuProfile  string
	limits      bench.Limits
	python      string // interpreter for the Python client's figure ("" skips it)
	pyScript    string
	pySelect    string
	mode        string // single, pool or both (pool.go)
}

func main() {
	var c config
	var runners string
	flag.StringVar(&c.backend, "backend", "postgres", "store to measure: postgres or etcd (an embedded single member, fsync on)")
	flag.StringVar(&c.api, "api", "direct", "how runners reach chunklock: direct (the Store in this process), graphql (HTTP to a chunklock serve process), both, or graphql-inproc (HTTP to a GraphQL server in this process, to profile the API with -cpuprofile)")
	flag.StringVar(&runners, "runners", "1,4,16,64", "comma-separated numbers of concurrent runners")
	flag.IntVar(&c.chunks, "chunks", 3000, "chunks each run drains")
	flag.StringVar(&c.dsn, "dsn", envOr("CHUNKLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL DSN (-backend postgres)")
	flag.DurationVar(&c.baseline, "baseline", 5*time.Second, "how long each raw-commit baseline runs (0 skips it)")
	flag.BoolVar(&c.river, "river", true, "also run River's benchmark (bench/river) at the same worker counts (-backend postgres)")
	flag.StringVar(&c.riverDir, "river-dir", "bench/river", "directory of the River benchmark module")
	flag.StringVar(&c.serverBin, "server-bin", "", "chunklock binary for -api graphql (default: built from ./cmd/chunklock)")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the runners and, with -api direct, the store) to this file")
	flag.IntVar(&c.limits.MaxConcurrent, "max-concurrent", 0, "maxConcurrent of the benchmark job (0: no limit); set above the runners to measure what counting live claims costs")
	flag.IntVar(&c.limits.PoolSlots, "pool-slots", 0, "put the benchmark job in a pool of its own with this many slots (0: no pool)")
	flag.StringVar(&c.python, "python", "", "with -api graphql or both, also measure the Python client (-python-script) with this interpreter against the same serve process, after each graphql row (empty: skip)")
	flag.StringVar(&c.pyScript, "python-script", "clients/python/bench/cycles.py", "the Python client's benchmark; the client is imported from clients/python/src")
	flag.StringVar(&c.mode, "mode", "single", "single (R runners, each findNext then complete), pool (one runner with R slots: claimNext for its free slots, their completeMany beside the next claimNext) or both")
	flag.StringVar(&c.pySelect, "python-select", "claim", "what the Python client's findNext selects: claim (the whole claim, as the client does) or token (the token only, as the Go rows)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: chunklock-bench [flags]\n\n%s\n\nflags:\n", strings.TrimSpace(usage))
		flag.PrintDefaults()
	}
	flag.Parse()
	for _, s := range strings.Split(runners, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-runners: %q is not a positive number", s))
		}
		c.runners = append(c.runners, n)
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(context.Background(), c); err != nil {
		pprof.StopCPUProfile()
		fail(err)
	}
}

const usage = `
Measures findNext → complete cycles per second with R concurrent runners, the
latency of each call (p50, p99), and the store's raw commit rate with R
writers; prints our figure as a ratio of that limit (cycles/s ÷ (commits/s ÷ 2):
one cycle is two transactions). With -api graphql it starts a chunklock serve
process on the same store and reports that process's peak RSS. cpu ms/c is
the CPU time of this process per cycle (runners and, with -api direct, the
engine, and the embedded etcd member with -backend etcd); srv ms/c, that of
the serve process; db ms/c, that of the PostgreSQL server when it runs on
this machine. idle% and steal% are the machine's idle time and the time its
hypervisor gave to others, over the run: figures taken with steal are low.

With -python (and -api graphql or both), each graphql row is followed by a
python row: the Python client (clients/python, run from the repository root)
draining a fresh pipeline of the same size with R threads of one process
against the same serve process; its cpu ms/c is that process's, and a line
after the table gives its cycles/s as a ratio of the graphql row's.

With -mode pool (or both), each R is also (or only) measured as one runner
with R slots (rows direct-pool, graphql-pool), driven as chunklock run
--parallel drives its slots: it claims for all its free slots with one
claimNext and ends what it got with one completeMany in the background
while the next claimNext is on its way (no-op work, at most one
completeMany in flight), until the pipeline is drained; find and compl are
the latencies of those batch calls, and a cycle is still one chunk claimed
and completed.`

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chunklock-bench:", err)
	os.Exit(1)
}

// target is one store under measurement.
type target struct {
	store    backends.Store
	storeURL string // for a serve process
	baseline func(ctx context.Context, runners int) (float64, error)
	close    func()
}

func openTarget(ctx context.Context, c config) (*target, error) {
	switch c.backend {
	case "postgres":
		schema := fmt.Sprintf("chunklock_bench_%d", time.Now().Unix())
		b, err := postgres.Open(ctx, postgres.Config{DSN: c.dsn, Schema: schema, MaxConns: 80})
		if err != nil {
			return nil, err
		}
		st := engine.New(b)
		url := c.dsn
		if strings.Contains(url, "?") {
			url += "&schema=" + schema
		} else {
			url += "?schema=" + schema
		}
		return &target{store: st, storeURL: url,
			baseline: func(ctx context.Context, r int) (float64, error) {
				return bench.PostgresCommitRate(ctx, c.dsn, r, c.baseline)
			},
			close: func() { st.Close() }}, nil
	case "etcd":
		dir, err := os.MkdirTemp("", "chunklock-bench-etcd-")
		if err != nil {
			return nil, err
		}
		srv, err := embedded.Start(ctx, embedded.Config{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"})
		if err != nil {
			return nil, err
		}
		cli, err := srv.Client()
		if err != nil {
			srv.Close()
			return nil, err
		}
		prefix := "/chunklock-bench/"
		b, err := etcd.OpenClient(ctx, cli, etcd.Config{Prefix: prefix, MaxTxnOps: srv.MaxTxnOps()})
		if err != nil {
			cli.Close()
			srv.Close()
			return nil, err
		}
		st := engine.New(b)
		host := strings.TrimPrefix(srv.ClientURL(), "http://")
		return &target{store: st, storeURL: "etcd://" + host + prefix,
			baseline: func(ctx context.Context, r int) (float64, error) {
				return bench.EtcdTxnRate(ctx, cli, prefix, r, c.baseline)
			},
			close: func() { st.Close(); cli.Close(); srv.Close(); os.RemoveAll(dir) }}, nil
	}
	return nil, fmt.Errorf("-backend %q: want postgres or etcd", c.backend)
}

func run(ctx context.Context, c config) error {
	t, err := openTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.close()
	apis := []string{c.api}
	if c.api == "both" {
		apis = []string{"direct", "graphql"}
	}
	var srv *serveProcess
	inproc := ""
	for _, api := range apis {
		switch api {
		case "graphql":
			if srv, err = startServe(ctx, c, t.storeURL); err != nil {
				return err
			}
			defer srv.stop()
		case "graphql-inproc":
			s, err := server.New(serverConfig(t.store))
			if err != nil {
				return err
			}
			hs := httptest.NewServer(s.Handler())
			defer hs.Close()
			inproc = hs.URL
		case "direct":
		default:
			return fmt.Errorf("-api %q: want direct, graphql, both or graphql-inproc", api)
		}
	}
	var rows []row
	limits := map[int]float64{}
	rivers := map[int]float64{}
	for _, r := range c.runners {
		if c.baseline > 0 {
			fmt.Fprintf(os.Stderr, "baseline: raw commits with %d writers for %s...\n", r, c.baseline)
			commits, err := t.baseline(ctx, r)
			if err != nil {
				return fmt.Errorf("baseline: %w", err)
			}
			limits[r] = commits / 2
		}
		if c.river && c.backend == "postgres" {
			if jobs, err := runRiver(c, r); err != nil {
				fmt.Fprintf(os.Stderr, "river: %v (skipped)\n", err)
			} else {
				rivers[r] = jobs
			}
		}
		for _, api := range apis {
			url := inproc
			if api == "graphql" {
				url = srv.url
			}
			for _, pool := range modes(c.mode) {
				rw, err := measure(ctx, c, t, api, url, srv, r, pool)
				if err != nil {
					return err
				}
				rw.limit, rw.river = limits[r], rivers[r]
				rows = append(rows, rw)
			}
			if api == "graphql" && c.python != "" {
				rw, err := runPython(ctx, c, t.store, srv, r)
				if err != nil {
					return err
				}
				rw.limit = limits[r]
				rows = append(rows, rw)
			}
		}
	}
	printRows(c, rows)
	return nil
}

// measure drives R runners through one API (direct, or GraphQL at url) on a
// fresh pipeline, with the CPU times of the processes involved.
func measure(ctx context.Context, c config, t *target, api, url string, srv *serveProcess, r int, pool bool) (row, error) {
	var d bench.Driver = bench.StoreDriver{Store: t.store}
	var pd bench.PoolDriver = bench.StoreDriver{Store: t.store}
	if api != "direct" {
		// One kept-alive connection per runner, as separate runner
		// processes would have (the default keeps 2 idle per host).
		hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: r}}
		cl, err := client.New(url, client.WithHTTPClient(hc))
		if err != nil {
			return row{}, err
		}
		d, pd = graphqlDriver{cl}, graphqlDriver{cl}
	}
	prefix := fmt.Sprintf("b%d-%s-r%d", time.Now().Unix()%100000, api, r)
	fmt.Fprintf(os.Stderr, "%s R=%d: publishing %d chunks...\n", api, r, c.chunks)
	p, err := bench.SetupLimited(ctx, t.store, prefix, c.chunks, c.limits, os.Stderr)
	if err != nil {
		return row{}, err
	}
	cpu0, srv0, db0, m0 := processCPU(os.Getpid()), time.Duration(0), postgresCPU(), readMachineTimes()
	if api == "graphql" {
		srv0 = processCPU(srv.cmd.Process.Pid)
	}
	var res bench.Result
	if pool {
		res, err = bench.RunPool(ctx, pd, p, r, os.Stderr)
		api += "-pool"
	} else {
		res, err = bench.Run(ctx, d, p, r, 0, os.Stderr)
	}
	if err != nil {
		return row{}, err
	}
	rw := row{api: api, res: res, cpu: processCPU(os.Getpid()) - cpu0, machine: readMachineTimes().since(m0)}
	if c.backend == "postgres" && db0 > 0 {
		rw.dbCPU = postgresCPU() - db0
	}
	if strings.HasPrefix(api, "graphql") && srv != nil {
		rw.rss, rw.srvCPU = srv.peakRSS(), processCPU(srv.cmd.Process.Pid)-srv0
	}
	return rw, nil
}

// printRows prints the table, and each Python row's ratio to the graphql
// row of the same R.
func printRows(c config, rows []row) {
	fmt.Printf("\nbackend=%s chunks/run=%d maxConcurrent=%d poolSlots=%d\n", c.backend, c.chunks, c.limits.MaxConcurrent, c.limits.PoolSlots)
	fmt.Printf("%-12s %4s %10s %12s %12s %12s %12s %12s %7s %10s %9s %9s %9s %9s %6s %6s\n",
		"api", "R", "cycles/s", "find p50", "find p99", "compl p50", "compl p99", "limit/2", "ratio", "river/s", "rss MB", "cpu ms/c", "srv ms/c", "db ms/c", "idle%", "steal%")
	for _, rw := range rows {
		ratio, river, rss, srvCPU, dbCPU := "-", "-", "-", "-", "-"
		if rw.limit > 0 {
			ratio = fmt.Sprintf("%.2f", rw.res.CyclesPerSecond()/rw.limit)
		}
		if rw.river > 0 {
			river = fmt.Sprintf("%.0f", rw.river)
		}
		if rw.rss > 0 {
			rss = fmt.Sprintf("%.1f", float64(rw.rss)/(1<<20))
		}
		perCycle := func(d time.Duration) string {
			return fmt.Sprintf("%.3f", d.Seconds()*1000/float64(max(rw.res.Cycles, 1)))
		}
		if rw.srvCPU > 0 {
			srvCPU = perCycle(rw.srvCPU)
		}
		if rw.dbCPU > 0 {
			dbCPU = perCycle(rw.dbCPU)
		}
		fmt.Printf("%-12s %4d %10.0f %12s %12s %12s %12s %12.0f %7s %10s %9s %9s %9s %9s %6s %6s\n", rw.api, rw.res.Runners, rw.res.CyclesPerSecond(),
			rw.res.FindNext.P50.Round(time.Microsecond), rw.res.FindNext.P99.Round(time.Microsecond),
			rw.res.Complete.P50.Round(time.Microsecond), rw.res.Complete.P99.Round(time.Microsecond), rw.limit, ratio, river, rss,
			perCycle(rw.cpu), srvCPU, dbCPU, rw.machine.percent(rw.machine.idle), rw.machine.percent(rw.machine.steal))
	}
	for i, rw := range rows {
		if rw.api == "python" && i > 0 && rows[i-1].api == "graphql" {
			fmt.Printf("python/graphql R=%d: %.2f (Python client, findNext selecting the %s, against the Go client's GraphQL figure)\n",
				rw.res.Runners, rw.res.CyclesPerSecond()/rows[i-1].res.CyclesPerSecond(), c.pySelect)
		}
	}
}

// row is one line of the table: one run of R runners through one API.
type row struct {
	api          string
	res          bench.Result
	limit, river float64
	rss          int64
	cpu, srvCPU  time.Duration // CPU time of the runners' process and of the serve process during the run
	dbCPU        time.Duration // CPU time of the local PostgreSQL server's processes during the run
	machine      machineTimes  // the machine's CPU time during the run, by state
}

// serverConfig is what chunklock serve uses for the benchmark: open (no
// tokens), age keys, the complexity bound raised as the serve process gets it.
func serverConfig(st backends.Store) server.Config {
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = st, age.New()
	cfg.MaxComplexity = 100000
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

// serveProcess is a chunklock serve child process.
type serveProcess struct {
	cmd *exec.Cmd
	url string
	dir string
}

func startServe(ctx context.Context, c config, storeURL string) (*serveProcess, error) {
	dir, err := os.MkdirTemp("", "chunklock-bench-serve-")
	if err != nil {
		return nil, err
	}
	bin := c.serverBin
	if bin == "" {
		bin = filepath.Join(dir, "chunklock")
		fmt.Fprintln(os.Stderr, "building chunklock for -api graphql...")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/chunklock")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building chunklock (run from the repository root, or give -server-bin): %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--store", storeURL, "--data-dir", filepath.Join(dir, "data"),
		"--max-complexity", "100000", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serveProcess{cmd: cmd, url: "http://" + addr, dir: dir}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return p, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop()
	return nil, errors.New("chunklock serve did not listen within 60s")
}

var hwm = regexp.MustCompile(`VmHWM:\s+(\d+) kB`)

// processCPU reads a process's user and system CPU time (Linux /proc; 0
// elsewhere).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which ends with the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// postgresCPU is the CPU time of the PostgreSQL server processes on this
// machine (Linux /proc; 0 elsewhere), those gone included: the postmaster
// collects its exited backends' times.
func postgresCPU() time.Duration {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || s[open+1:close] != "postgres" {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 15 {
			continue
		}
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// machineTimes is the machine's CPU time by state (/proc/stat, in ticks).
type machineTimes struct{ total, idle, steal int64 }

func readMachineTimes() machineTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTimes{}
	}
	var m machineTimes
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i < 8 { // user nice system idle iowait irq softirq steal (guest is in user)
			m.total += n
		}
		switch i {
		case 3, 4:
			m.idle += n
		case 7:
			m.steal = n
		}
	}
	return m
}

func (m machineTimes) since(o machineTimes) machineTimes {
	return machineTimes{total: m.total - o.total, idle: m.idle - o.idle, steal: m.steal - o.steal}
}

func (m machineTimes) percent(part int64) string {
	if m.total <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", 100*float64(part)/float64(m.total))
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// peakRSS reads the process's peak resident set size.
func (p *serveProcess) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	m := hwm.FindSubmatch(b)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

func (p *serveProcess) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(p.dir)
}

var riverRate = regexp.MustCompile(`jobs/s=(\d+)`)

// runRiver runs River's benchmark with workers workers on the same database.
func runRiver(c config, workers int) (float64, error) {
	if _, err := os.Stat(filepath.Join(c.riverDir, "go.mod")); err != nil {
		return 0, fmt.Errorf("no River benchmark module at %s", c.riverDir)
	}
	fmt.Fprintf(os.Stderr, "river: %d workers, %d jobs...\n", workers, c.chunks)
	cmd := exec.Command("go", "run", ".", "-dsn", c.dsn, "-workers", strconv.Itoa(workers), "-jobs", strconv.Itoa(c.chunks))
	cmd.Dir = c.riverDir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, err
	}
	m := riverRate.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("unexpected output %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

var _ = clientv3.WithPrefix
