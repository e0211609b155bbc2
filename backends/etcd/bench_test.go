package etcd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// benchEnv is one seeded store: its own embedded member, so that the sizes
// do not share a database.
type benchEnv struct {
	srv  *embedded.Server
	cli  *clientv3.Client
	s    backends.Store
	next int // next dataid to publish
}

var (
	benchMu   sync.Mutex
	benchEnvs = map[int]*benchEnv{}
)

// historySizes are the consumed-history sizes measured: 1,000 and
// CHUNKLOCK_BENCH_HISTORY (default 1,000,000).
func historySizes(b *testing.B) []int {
	large := 1_000_000
	if v := os.Getenv("CHUNKLOCK_BENCH_HISTORY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CHUNKLOCK_BENCH_HISTORY=%q is not a positive number", v)
		}
		large = n
	}
	return []int{1000, large}
}

// BenchmarkFindNextHistory measures findNext on a job that has already
// consumed n chunks (src READY, the job's INPUT row DONE, its OUTPUT row
// READY, a fence: four keys per chunk, seeded with bulk Txn puts, not
// through the API), with fresh chunks published for the measured calls.
// It reports the p50 and p90 latency of findNext alone (the completion
// after each claim is not timed). Run it with a fixed count, e.g.
//
//	go test ./backends/etcd/ -run '^$' -bench FindNextHistory -benchtime 1000x
func BenchmarkFindNextHistory(b *testing.B) {
	for _, n := range historySizes(b) {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			env := benchSetup(b, n)
			ctx := context.Background()
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				if _, err := env.s.Publish(ctx, "src", strconv.Itoa(env.next+i)); err != nil {
					b.Fatal(err)
				}
			}
			env.next += b.N
			timeFindNext(b, ctx, env.s, nil)
		})
	}
	benchMu.Lock()
	defer benchMu.Unlock()
	for n, env := range benchEnvs {
		env.s.Close()
		env.cli.Close()
		env.srv.Close()
		os.RemoveAll(env.srv.Dir())
		delete(benchEnvs, n)
	}
}

// benchSetup returns the store with n consumed chunks, seeding it once.
func benchSetup(b *testing.B, n int) *benchEnv {
	benchMu.Lock()
	defer benchMu.Unlock()
	if env, ok := benchEnvs[n]; ok {
		return env
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chunklock-etcd-bench-")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	cli, err := srv.Client()
	if err != nil {
		b.Fatal(err)
	}
	be, err := OpenClient(ctx, cli, Config{MaxTxnOps: srv.MaxTxnOps()})
	if err != nil {
		b.Fatal(err)
	}
	s := engine.New(be)
	for _, d := range []string{"src", "out"} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: d}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.UpsertJob(ctx, backends.Job{ID: "job", Inputs: []string{"src"}, Output: "out"}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := seedHistory(ctx, be, n); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d consumed chunks (%d keys) in %v", n, 4*n, time.Since(t0).Round(time.Millisecond))
	env := &benchEnv{srv: srv, cli: cli, s: s, next: n + 1}
	benchEnvs[n] = env
	return env
}

// seedHistory writes the rows of n consumed chunks (dataids 1..n) directly,
// in transactions of MaxTxnOps puts, several in flight at once.
func seedHistory(ctx context.Context, be *Backend, n int) error {
	now := backends.SystemClock{}.Now()
	per := be.cfg.MaxTxnOps / 4
	batches := make(chan [2]int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for r := range batches {
				ops := make([]clientv3.Op, 0, 4*(r[1]-r[0]))
				for i := r[0]; i < r[1]; i++ {
					id := strconv.Itoa(i)
					tok := backends.NewToken("job", "out", id, 1)
					src := backends.StatusRow{RowKey: backends.RowKey{Dataset: "src", DataID: id, Role: backends.RoleOutput}, Status: backends.StatusReady, UpdatedAt: now}
					in := backends.StatusRow{RowKey: backends.RowKey{Dataset: "src", DataID: id, Job: "job", Role: backends.RoleInput}, Status: backends.StatusDone, Attempt: 1, Executor: "seed", Token: tok, Fence: 1, UpdatedAt: now}
					out := backends.StatusRow{RowKey: backends.RowKey{Dataset: "out", DataID: id, Job: "job", Role: backends.RoleOutput}, Status: backends.StatusReady, Attempt: 1, Executor: "seed", Token: tok, Fence: 1, UpdatedAt: now}
					ops = append(ops,
						clientv3.OpPut(be.rowKey(src.RowKey), string(encodeRow(src))),
						clientv3.OpPut(be.rowKey(in.RowKey), string(encodeRow(in))),
						clientv3.OpPut(be.rowKey(out.RowKey), string(encodeRow(out))),
						clientv3.OpPut(be.fenceKey("out", id), "1"))
				}
				if _, err := be.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for lo := 1; lo <= n; lo += per {
		select {
		case batches <- [2]int{lo, min(lo+per, n+1)}:
		case err = <-errs:
			break feed
		}
	}
	close(batches)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// privateBackend starts an etcd member of the benchmark's own in a
// temporary directory, and returns a client of it and a backend on that
// client; they are closed when the benchmark ends.
func privateBackend(b *testing.B) (*clientv3.Client, *Backend) {
	ctx := context.Background()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: b.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	cli, err := srv.Client()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	be, err := OpenClient(ctx, cli, Config{MaxTxnOps: srv.MaxTxnOps()})
	if err != nil {
		b.Fatal(err)
	}
	return cli, be
}

// bulkRows writes status rows straight into etcd, as many per Txn as the
// member takes (a backendtest.RowWriter for seeding benchmarks).
func (b *Backend) bulkRows(ctx context.Context, rows []backends.StatusRow) error {
	for len(rows) > 0 {
		batch := rows[:min(len(rows), b.cfg.MaxTxnOps)]
		rows = rows[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, r := range batch {
			ops[i] = clientv3.OpPut(b.rowKey(r.RowKey), string(encodeRow(r)))
		}
		if _, err := b.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return err
		}
	}
	return nil
}
