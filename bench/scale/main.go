// Command scale measures chunklock with years of history: the same
// pipeline on an empty store and on one seeded with a long history, side
// by side, in one run. Run it from the repository root:
//
//	go run ./bench/scale -store postgres -duration 2m    # 100 datasets x 100,000 hours: 10 million chunks
//	go run ./bench/scale -store postgres -scale 10x10000 # a quick run (about a minute)
//	go run ./bench/scale -store etcd -scale 10x10000
//	go run ./bench/scale -store etcd -fill -quota 536870912 -scale 10x100000   # NOSPACE at 512 MiB
//
// See usage below and BENCHMARKS.md ("Years of history").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

const usage = `
Builds the same pipeline twice, through the API of a real chunklock serve
process: half of the datasets are HOURLY sources, the other half are each
produced by a job reading one source, one to one. The first store stays
empty; the second is seeded in bulk (PostgreSQL: COPY into the store's
tables; etcd: puts into its key layout) with -scale DATASETSxHOURS of
history: every source hour published, every product hour produced but
the last 1 to 4 of each job, which wait in its queue. The seeded store is
checked through the API (chunks, rows, events, partitions, and a findNext
that must claim the first hour not consumed) before anything is timed.

On each store, after a restart: the server's start time (exec to the first
200 of /readyz) and RSS; then traffic for -duration (publishes of new
hours at -rate a second, -runners runners claiming and completing, a
reader timing pages of chunks and partitions); then the dashboard's first
paint and chunklock status, alone; then the store's size. The table
compares each figure with the empty store's.

With -fill (etcd), it seeds until the store's quota refuses a write, then
says how the server behaves: health, reads, claims, publishes and a
restart. Without -quota that is the embedded store's 8 GiB, which takes
about 5.7 million chunks and, before them, 35 to 39 GB of the server's
memory (BENCHMARKS.md); -quota N fills an etcd member of the benchmark's
own with quota N instead, in seconds to minutes.`

type config struct {
	store         string
	pairs, hours  int
	dsn           string
	serverBin     string
	workDir       string
	traffic       trafficConfig
	statusTimeout time.Duration
	keep, fill    bool
	quota         int64
	phases        []string
}

func main() {
	var c config
	var scale, phases string
	flag.StringVar(&c.store, "store", "postgres", "store to measure: postgres or etcd (the embedded store of chunklock serve)")
	flag.StringVar(&scale, "scale", "100x100000", "DATASETSxHOURS: datasets (an even number: half sources, half products) and the hours of history seeded per source")
	flag.StringVar(&c.dsn, "dsn", envOr("CHUNKLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL DSN (-store postgres); the run makes schemas of its own and drops them")
	flag.StringVar(&c.serverBin, "server-bin", "", "chunklock binary (default: built from ./cmd/chunklock)")
	flag.StringVar(&c.workDir, "work-dir", "", "directory for data directories, logs and the binary (default: a new temporary directory, removed at the end unless -keep)")
	flag.IntVar(&c.traffic.runners, "runners", 4, "runners claiming and completing during the traffic")
	flag.Float64Var(&c.traffic.rate, "rate", 20, "publishes a second during the traffic")
	flag.DurationVar(&c.traffic.duration, "duration", 20*time.Second, "how long the traffic runs on each store")
	flag.DurationVar(&c.statusTimeout, "status-timeout", time.Hour, "give up on chunklock status after this long")
	flag.BoolVar(&c.keep, "keep", false, "keep the schemas, data directories and logs")
	flag.BoolVar(&c.fill, "fill", false, "etcd: seed until the store refuses writes (NOSPACE), then probe the server")
	flag.Int64Var(&c.quota, "quota", 0, "with -fill: fill an etcd member of the benchmark's own with this quota in bytes (0: the embedded store of chunklock serve, whose quota is 8 GiB)")
	flag.StringVar(&phases, "phases", "empty,seeded", "which stores to measure: empty, seeded or both")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./bench/scale [flags]\n%s\n\nflags:\n", usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	var err error
	if c.pairs, c.hours, err = parseScale(scale); err != nil {
		fail(err)
	}
	c.phases = strings.Split(phases, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c); err != nil {
		fail(err)
	}
}

func parseScale(s string) (pairs, hours int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	d, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || d < 2 || d%2 != 0 || h < 8 {
		return 0, 0, fmt.Errorf("-scale %q: want DATASETSxHOURS with an even number of datasets (at least 2) and at least 8 hours, e.g. 10x10000", s)
	}
	return d / 2, h, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(1)
}

// withParam adds a query parameter to a URL-form DSN.
func withParam(dsn, k, v string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + url.QueryEscape(k) + "=" + url.QueryEscape(v)
}

// spareHours is how many hours after the seeded ones the traffic may
// publish per source: what -rate and -duration ask, with room to spare.
func (c config) spareHours() int {
	return int(math.Ceil(c.traffic.rate*c.traffic.duration.Seconds()/float64(c.pairs))) + 10
}

func run(ctx context.Context, c config) error {
	if c.store != "postgres" && c.store != "etcd" {
		return fmt.Errorf("-store %q: want postgres or etcd", c.store)
	}
	if c.fill && c.store != "etcd" {
		return errors.New("-fill measures the embedded etcd store: give -store etcd")
	}
	dir, cleanup, err := workDir(c)
	if err != nil {
		return err
	}
	defer cleanup()
	bin := c.serverBin
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building chunklock...")
		if bin, err = buildChunklock(ctx, dir); err != nil {
			return err
		}
	}
	l := newLayout(c.pairs, c.hours, c.spareHours(), time.Now())
	fmt.Fprintf(os.Stderr, "layout: %d sources and %d products, HOURLY from %s; seeded history %s .. %s (%d chunks)\n",
		l.pairs, l.pairs, l.dataid(0), l.dataid(0), l.dataid(l.hours-1), l.chunks())
	if c.fill {
		return runFill(ctx, c, bin, dir, l)
	}
	var results []*phaseResult
	for _, name := range c.phases {
		if name != "empty" && name != "seeded" {
			return fmt.Errorf("-phases: %q is neither empty nor seeded", name)
		}
		r, err := runPhase(ctx, c, bin, dir, l, name)
		if err != nil {
			return fmt.Errorf("%s store: %w", name, err)
		}
		results = append(results, r)
	}
	printReport(os.Stdout, c, l, results)
	return nil
}

// workDir returns the run's directory and what removes it.
func workDir(c config) (string, func(), error) {
	if c.workDir != "" {
		return c.workDir, func() {}, os.MkdirAll(c.workDir, 0o755)
	}
	dir, err := os.MkdirTemp("", "chunklock-scale-")
	if err != nil {
		return "", nil, err
	}
	if c.keep {
		fmt.Fprintln(os.Stderr, "work directory (kept):", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
