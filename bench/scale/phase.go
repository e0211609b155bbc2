package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// phaseResult is what one store measured.
type phaseResult struct {
	name                   string
	seed                   seedStats
	seeded, final          storeSize // right after the seed (before any traffic), and at the end
	start                  time.Duration
	rssStart, rssEnd, peak int64
	traffic                *trafficResult
	overview               overview
	status                 time.Duration
	statusLines            int
	statusErr, overviewErr error
}

// storeSize is a store's size: PostgreSQL, its tables (total and each);
// etcd, the database as etcd reports it (file, and in use) and the data
// directory on disk.
type storeSize struct {
	total, inUse, disk int64
	tables             map[string]int64
}

// target is the store a phase runs on.
type target interface {
	serveArgs() []string
	// attach is called with each server started on the store.
	attach(s *serveProc) error
	seed(ctx context.Context, l layout) (seedStats, error)
	size(ctx context.Context, s *serveProc) (storeSize, error)
	cleanup(ctx context.Context, keep bool)
}

func newTarget(ctx context.Context, c config, dir, phase string) (target, error) {
	if c.store == "etcd" {
		return &etcdTarget{etcdStore{dir: filepath.Join(dir, phase+"-data"), prefix: etcdPrefix}}, nil
	}
	schema := fmt.Sprintf("chunklock_scale_%d_%s", time.Now().Unix(), phase)
	p, err := openPG(ctx, c.dsn, schema)
	if err != nil {
		return nil, err
	}
	return &pgTarget{p}, nil
}

// runPhase builds the pipeline on a new store through the API, seeds it
// (phase seeded), restarts the server and measures.
func runPhase(ctx context.Context, c config, bin, dir string, l layout, phase string) (*phaseResult, error) {
	t, err := newTarget(ctx, c, dir, phase)
	if err != nil {
		return nil, err
	}
	defer t.cleanup(context.WithoutCancel(ctx), c.keep)
	logPath := filepath.Join(dir, phase+"-serve.log")
	srv, err := startServer(ctx, bin, logPath, t.serveArgs()...)
	if err != nil {
		return nil, err
	}
	defer func() { srv.stop() }()
	if err := t.attach(srv); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "%s: declaring %d datasets and %d jobs...\n", phase, 2*l.pairs, l.pairs)
	if err := createCatalog(ctx, srv.api, l); err != nil {
		return nil, err
	}
	r := &phaseResult{name: phase}
	if phase == "seeded" {
		fmt.Fprintf(os.Stderr, "seeding %d chunks...\n", l.chunks())
		if r.seed, err = t.seed(ctx, l); err != nil {
			return nil, err
		}
		fmt.Fprintln(os.Stderr, "seeded:", r.seed)
	}
	if r.seeded, err = t.size(ctx, srv); err != nil {
		return nil, err
	}
	srv.stop()
	if srv, err = startServer(ctx, bin, logPath, t.serveArgs()...); err != nil {
		return nil, err
	}
	if err := t.attach(srv); err != nil {
		return nil, err
	}
	r.start = srv.started
	r.rssStart, _ = srv.memory()
	fmt.Fprintf(os.Stderr, "%s: server ready in %s, RSS %s\n", phase, r.start.Round(time.Millisecond), mib(r.rssStart))
	if phase == "seeded" {
		if err := checkSeeded(ctx, srv.api, l); err != nil {
			return nil, err
		}
		fmt.Fprintln(os.Stderr, "seeded: the sample checked through the API answers as a store built through the API")
	}
	if err := measureServer(ctx, c, bin, srv, l, r); err != nil {
		return nil, err
	}
	r.rssEnd, r.peak = srv.memory()
	r.final, err = t.size(ctx, srv)
	return r, err
}

// measureServer runs the traffic, then the dashboard's first paint and
// chunklock status on their own.
func measureServer(ctx context.Context, c config, bin string, srv *serveProc, l layout, r *phaseResult) error {
	fmt.Fprintf(os.Stderr, "%s: traffic for %s...\n", r.name, c.traffic.duration)
	r.traffic = runTraffic(ctx, srv.api, l, c.traffic, os.Stderr)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(os.Stderr, "%s: the dashboard's first paint...\n", r.name)
	r.overview, r.overviewErr = dashboardOverview(ctx, srv.api)
	fmt.Fprintf(os.Stderr, "%s: chunklock status...\n", r.name)
	r.status, r.statusLines, r.statusErr = statusCommand(ctx, bin, srv.url, c.statusTimeout)
	if !srv.alive() {
		return fmt.Errorf("the server died; its log: %s", srv.logPath)
	}
	return ctx.Err()
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// pgTarget is a PostgreSQL schema.
type pgTarget struct{ p *pgStore }

func (t *pgTarget) serveArgs() []string       { return []string{"--store", t.p.storeURL()} }
func (t *pgTarget) attach(s *serveProc) error { return nil }
func (t *pgTarget) seed(ctx context.Context, l layout) (seedStats, error) {
	return t.p.seed(ctx, l, os.Stderr)
}

func (t *pgTarget) size(ctx context.Context, _ *serveProc) (storeSize, error) {
	total, tables, err := t.p.size(ctx)
	return storeSize{total: total, tables: tables}, err
}

func (t *pgTarget) cleanup(ctx context.Context, keep bool) {
	if keep {
		fmt.Fprintln(os.Stderr, "kept schema", t.p.schema)
		t.p.pool.Close()
		return
	}
	if err := t.p.drop(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "dropping schema %s: %v (drop it by hand)\n", t.p.schema, err)
	}
}

// etcdTarget is the embedded store of a data directory.
type etcdTarget struct{ e etcdStore }

func (t *etcdTarget) serveArgs() []string {
	return []string{"--data-dir", t.e.dir, "--etcd-client-addr", "127.0.0.1:0"}
}

func (t *etcdTarget) attach(s *serveProc) error {
	if s.etcdURL == "" {
		return fmt.Errorf("the server did not name its embedded etcd's client URL; its log: %s", s.logPath)
	}
	return t.e.connect(s.etcdURL)
}

func (t *etcdTarget) seed(ctx context.Context, l layout) (seedStats, error) {
	st, _, err := t.e.seed(ctx, l, false, os.Stderr)
	return st, err
}

func (t *etcdTarget) size(ctx context.Context, s *serveProc) (storeSize, error) {
	db, inUse, err := t.e.size(ctx, s.etcdURL)
	return storeSize{total: db, inUse: inUse, disk: dirSize(t.e.dir)}, err
}

func (t *etcdTarget) cleanup(_ context.Context, keep bool) {
	t.e.close()
	if !keep {
		os.RemoveAll(t.e.dir)
	}
}
