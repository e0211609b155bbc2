package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkFindNextMapped: findNext of a 7-day lookback job and of a
// weekly roll-up against that of a job reading one to one, over 100,000
// consumed days (backendtest.BenchFindNextMapped; rows seeded with bulk
// SQL, not through the API).
//
//	go test ./backends/postgres/ -run '^$' -bench FindNextMapped -benchtime 2000x -timeout 30m
func BenchmarkFindNextMapped(b *testing.B) {
	ctx := context.Background()
	schema := freshSchema(b)
	s, err := Open(ctx, Config{DSN: testDSN(b), Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	n, next, err := backendtest.SeedMappingBench(ctx, s, backendtest.MappingBenchHistory, func(ctx context.Context, rows []backends.StatusRow) error {
		var d, i, j, r, k, st, e, f []string
		var a []int32
		var fe []int64
		for _, row := range rows {
			d, i, j, r = append(d, row.Dataset), append(i, row.DataID), append(j, row.Job), append(r, string(row.Role))
			k, st, e, f = append(k, backends.SortKey(row.DataID)), append(st, string(row.Status)), append(e, row.Executor), append(f, row.ReadFor)
			a, fe = append(a, int32(row.Attempt)), append(fe, row.Fence)
		}
		_, err := admin.pool.Exec(ctx, `INSERT INTO `+schema+`.status_rows (dataset, dataid, job, role, sortkey, status,
			attempt, executor, token, fence, lease_expires_at, updated_at, reason, prev_status, read_for)
			SELECT d, i, j, r, k, s, a, e, '', fe, NULL, now(), '', '', f
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::bigint[], $10::text[])
			  AS x(d, i, j, r, k, s, a, e, fe, f)`, d, i, j, r, k, st, a, e, fe, f)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.pool.Exec(ctx, "VACUUM ANALYZE "+schema+".status_rows"); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.Run("history=100000", func(b *testing.B) { backendtest.BenchFindNextMapped(b, s, &next) })
}
