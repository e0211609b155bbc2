package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkPartitions: pages of 500 partitions of a DAILY dataset with ten
// years expected in a store of 100,000 chunks (backendtest.BenchPartitions;
// rows seeded with bulk SQL, not through the API).
//
//	go test ./backends/postgres/ -run '^$' -bench Partitions -benchtime 500x
func BenchmarkPartitions(b *testing.B) {
	ctx := context.Background()
	schema := freshSchema(b)
	s, err := Open(ctx, Config{DSN: testDSN(b), Schema: schema, Clock: backends.NewFakeClock(backendtest.PartitionBenchClock)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	n, err := backendtest.SeedPartitionBench(ctx, s, func(ctx context.Context, rows []backends.StatusRow) error {
		var d, i, j, r, k, s, e, t []string
		var a []int32
		var f []int64
		for _, row := range rows {
			d, i, j, r = append(d, row.Dataset), append(i, row.DataID), append(j, row.Job), append(r, string(row.Role))
			k, s, e, t = append(k, backends.SortKey(row.DataID)), append(s, string(row.Status)), append(e, row.Executor), append(t, row.Token)
			a, f = append(a, int32(row.Attempt)), append(f, row.Fence)
		}
		_, err := admin.pool.Exec(ctx, `INSERT INTO `+schema+`.status_rows (dataset, dataid, job, role, sortkey, status,
			attempt, executor, token, fence, lease_expires_at, updated_at, reason, prev_status)
			SELECT d, i, j, r, k, s, a, e, t, f, NULL, now(), '', ''
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::text[], $10::bigint[])
			  AS x(d, i, j, r, k, s, a, e, t, f)`, d, i, j, r, k, s, a, e, t, f)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.pool.Exec(ctx, "VACUUM ANALYZE "+schema+".status_rows"); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.ResetTimer()
	backendtest.BenchPartitions(b, s)
}
