package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// runFill seeds an etcd store until its quota refuses a write (NOSPACE),
// then probes the server: health, reads, a claim, the completion and
// heartbeat of a claim made before the quota was reached, a publish; then
// a restart, and the same again. Shortly before the quota (when the
// database is within fillMargin of it) it publishes two hours past the
// history through the API and claims one of them, so that a claimable
// chunk and a live claim exist when writes stop. Without -quota the store
// is the embedded store of chunklock serve (8 GiB); with it, a member of
// the benchmark's own with that quota, which the server uses as a
// cluster.
func runFill(ctx context.Context, c config, bin, dir string, l layout) error {
	t := &etcdTarget{etcdStore{dir: filepath.Join(dir, "fill-data"), prefix: etcdPrefix}}
	defer t.cleanup(context.WithoutCancel(ctx), c.keep)
	args, quota := t.serveArgs(), int64(quotaBytes)
	var m *member
	if c.quota > 0 {
		var err error
		if m, err = startMember(ctx, t.e.dir, c.quota); err != nil {
			return err
		}
		defer m.close()
		t.e.quotaURL, quota = m.clientURL, c.quota
		args = []string{"--store", m.storeURL()}
		if err := t.e.connect(m.clientURL); err != nil {
			return err
		}
	}
	logPath := filepath.Join(dir, "fill-serve.log")
	srv, err := startServer(ctx, bin, logPath, args...)
	if err != nil {
		return err
	}
	defer func() { srv.stop() }()
	if c.quota == 0 {
		if err := t.attach(srv); err != nil {
			return err
		}
		t.e.quotaURL = srv.etcdURL
	}
	if err := createCatalog(ctx, srv.api, l); err != nil {
		return err
	}
	var token string
	t.e.quota, t.e.batchChunks = quota, fillBatch(quota)
	t.e.beforeFull = func(ctx context.Context) error {
		var err error
		token, err = prepareProbe(ctx, srv.api, l)
		return err
	}
	st, hours, err := t.e.seed(ctx, l, true, os.Stderr)
	if err != nil {
		return err
	}
	reportFill(ctx, t, srv, l, st, hours, quota)
	if hours == l.hours {
		fmt.Printf("fill: the whole history fits under the quota; give a larger -scale to reach it\n")
		return nil
	}
	probe(ctx, srv, l, token, "at the quota")
	time.Sleep(30 * time.Second)
	fmt.Printf("fill: 30 s later the server is alive: %v\n", srv.alive())
	srv.stop()
	if m != nil {
		// The member's directory, opened as the embedded store (8 GiB
		// quota, the alarm still raised).
		m.close()
		args = t.serveArgs()
	}
	srv, err = startServer(ctx, bin, logPath, args...)
	if err != nil {
		fmt.Printf("fill: restart at the quota: %v\n", err)
		return nil
	}
	fmt.Printf("fill: restart at the quota (%v): ready in %s\n", args, srv.started.Round(time.Millisecond))
	probe(ctx, srv, l, token, "after a restart")
	return nil
}

// reportFill prints how much the store held when it refused writes.
func reportFill(ctx context.Context, t *etcdTarget, srv *serveProc, l layout, st seedStats, hours int, quota int64) {
	db, inUse, _ := t.e.size(ctx, t.e.quotaURL)
	rss, peak := srv.memory()
	fmt.Printf("\nfill: quota %s: %d of %d hours seeded before NOSPACE: %d chunks (%d status rows, %d events) in %s\n",
		mib(quota), hours, l.hours, st.chunks, st.rows, st.events, st.took.Round(time.Second))
	fmt.Printf("fill: etcd db %s (in use %s), data directory %s; server RSS %s (peak %s)\n",
		mib(db), mib(inUse), mib(dirSize(filepath.Dir(t.e.dir))), mib(rss), mib(peak))
	fmt.Printf("fill: bytes per chunk at the quota: %.0f (db), %.0f (in use)\n", float64(db)/float64(st.chunks), float64(inUse)/float64(st.chunks))
	if t.e.quotaURL != srv.etcdURL {
		// The member runs in this process: its memory is this process's.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, _ := processMemory(os.Getpid())
		fmt.Printf("fill: the member's process: RSS %s, Go heap in use after a GC %s (%.0f bytes a chunk)\n",
			mib(rss), mib(int64(ms.HeapInuse)), float64(ms.HeapInuse)/float64(st.chunks))
	}
}

// fillMargin is how close to the quota the fill prepares its probe: an
// eighth of it.
func fillMargin(quota int64) int64 { return quota / 8 }

// fillBatch is how many chunks the fill writes between two looks at the
// size: about a 64th of the quota, at 1,500 bytes a chunk.
func fillBatch(quota int64) int { return max(100, int(quota/64/1500)) }

// quotaBytes is the embedded store's quota (etcd's default, which chunklock
// serve keeps).
const quotaBytes = 8 << 30

// prepareProbe publishes the two hours after the history of the first
// source and claims the first, returning the claim's token.
func prepareProbe(ctx context.Context, a *api, l layout) (string, error) {
	for _, h := range []int{l.hours, l.hours + 1} {
		if err := a.do(ctx, `mutation($d: String!, $i: String!) { publish(dataset: $d, dataid: $i) { status } }`,
			map[string]any{"d": l.source(0), "i": l.dataid(h)}, nil); err != nil {
			return "", fmt.Errorf("publishing before the quota: %w", err)
		}
	}
	var out struct{ Claim struct{ Token string } }
	err := a.do(ctx, `mutation($j: String!, $i: String!) { claim(job: $j, dataid: $i, executor: "scale-fill") { token } }`,
		map[string]any{"j": l.job(0), "i": l.dataid(l.hours)}, &out)
	if err != nil {
		return "", fmt.Errorf("claiming before the quota: %w", err)
	}
	fmt.Fprintf(os.Stderr, "fill: near the quota: published %s and %s of %s, claimed the first\n", l.dataid(l.hours), l.dataid(l.hours+1), l.source(0))
	return out.Claim.Token, nil
}

// probe prints what the server answers at the quota.
func probe(ctx context.Context, srv *serveProc, l layout, token, when string) {
	a := srv.api
	for _, p := range []string{"/healthz", "/readyz"} {
		code, body, err := a.get(ctx, p)
		fmt.Printf("fill %s: GET %s: %d %q %v\n", when, p, code, body, errOrEmpty(err))
	}
	id := l.dataid(0)
	ops := []struct{ name, doc string }{
		{"chunk", fmt.Sprintf(`{ chunk(dataset: %q, dataid: %q) { status } }`, l.product(0), id)},
		{"chunks page", fmt.Sprintf(`{ chunks(dataset: %q, first: 100) { edges { node { dataid } } } }`, l.source(0))},
		{"partitions page", fmt.Sprintf(`{ partitions(dataset: %q, first: 100) { edges { node { status } } } }`, l.source(0))},
		{"events", fmt.Sprintf(`{ events(dataset: %q, dataid: %q) { edges { node { to } } } }`, l.source(0), id)},
		{"claims", `{ claims { dataid } }`},
		{"findNext", fmt.Sprintf(`mutation { findNext(job: %q, executor: "scale-fill") { dataid } }`, l.job(0))},
		{"heartbeat", fmt.Sprintf(`mutation { heartbeat(token: %q) { leaseExpiresAt } }`, token)},
		{"complete", fmt.Sprintf(`mutation { complete(token: %q) }`, token)},
		{"publish", fmt.Sprintf(`mutation { publish(dataset: %q, dataid: %q) { status } }`, l.source(1), l.dataid(l.hours))},
	}
	for _, op := range ops {
		var out map[string]any
		d, err := a.timed(ctx, op.doc, nil, &out)
		fmt.Printf("fill %s: %s (%s): %v %v\n", when, op.name, fmtDur(d), short(out), errOrEmpty(err))
	}
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return "error: " + err.Error()
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
