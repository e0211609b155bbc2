package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The baselines measure the store's own write limit the way a runner cycle
// uses it: each findNext → complete cycle commits two transactions, so the
// ratio reported is cycles/s ÷ (commits/s ÷ 2).

// PostgresCommitRate measures one-row UPDATE transactions per second with
// runners connections, each updating its own row, for d.
func PostgresCommitRate(ctx context.Context, dsn string, runners int, d time.Duration) (float64, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	cfg.MaxConns = int32(runners)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	table := pgx.Identifier{fmt.Sprintf("chunklock_bench_commit_%d", time.Now().UnixNano())}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY, n bigint NOT NULL)"); err != nil {
		return 0, err
	}
	defer pool.Exec(context.WithoutCancel(ctx), "DROP TABLE "+table)
	if _, err := pool.Exec(ctx, "INSERT INTO "+table+" SELECT g, 0 FROM generate_series(0, $1) g", runners); err != nil {
		return 0, err
	}
	return rate(ctx, runners, d, func(ctx context.Context, r int) error {
		_, err := pool.Exec(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = $1", r)
		return err
	})
}

// EtcdTxnRate measures single-key Txn puts per second with runners
// goroutines, each writing its own key, for d.
func EtcdTxnRate(ctx context.Context, cli *clientv3.Client, prefix string, runners int, d time.Duration) (float64, error) {
	defer cli.Delete(context.WithoutCancel(ctx), prefix+"bench-commit/", clientv3.WithPrefix())
	return rate(ctx, runners, d, func(ctx context.Context, r int) error {
		_, err := cli.Txn(ctx).Then(clientv3.OpPut(fmt.Sprintf("%sbench-commit/%d", prefix, r), "x")).Commit()
		return err
	})
}

// rate runs op in runners goroutines for d and returns operations per second.
func rate(ctx context.Context, runners int, d time.Duration, op func(ctx context.Context, r int) error) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := op(ctx, r); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err; cancel() })
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}
