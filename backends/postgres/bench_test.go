package postgres

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkFindNextHistory measures findNext latency on a job that has
// already consumed 1,000, 100,000 and 1,000,000 chunks (seeded with bulk
// SQL, not through the API; CHUNKLOCK_BENCH_HISTORY lists other sizes,
// comma-separated), with a supply of ready chunks after them. The candidate
// queue keeps findNext away from the history, so p50 should barely move:
// the target is p50 at 1M <= 2 x p50 at 1k.
//
//	go test ./backends/postgres/ -run '^$' -bench FindNextHistory -benchtime 2000x
//	CHUNKLOCK_BENCH_HISTORY=1000,10000000 go test ./backends/postgres/ -run '^$' -bench FindNextHistory -benchtime 2000x -timeout 2h
func BenchmarkFindNextHistory(b *testing.B) {
	sizes := []int{1_000, 100_000, 1_000_000}
	if v := os.Getenv("CHUNKLOCK_BENCH_HISTORY"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("CHUNKLOCK_BENCH_HISTORY=%q: want comma-separated positive numbers", v)
			}
			sizes = append(sizes, n)
		}
	}
	// Seed every size before measuring any, so that the after-effects of
	// bulk loading do not fall on one measurement only.
	benchStates = map[int]*benchState{}
	for _, history := range sizes {
		benchStates[history] = seedHistory(b, history)
	}
	// Flush the seeding's dirty pages now rather than in a checkpoint
	// during a measurement (needs superuser or pg_checkpoint; best effort).
	if _, err := admin.pool.Exec(context.Background(), "CHECKPOINT"); err != nil {
		b.Logf("CHECKPOINT after seeding failed (%v); a measurement may include one", err)
	}
	b.ResetTimer()
	for _, history := range sizes {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			benchFindNext(b, benchStates[history])
		})
	}
}

// benchState is one seeded schema, shared by the runs of a sub-benchmark
// (the testing package calls it with b.N = 1 first, and cleanups registered
// on a sub-benchmark run after each run, so the parent owns the schema).
var benchStates map[int]*benchState

type benchState struct {
	schema  string
	store   backends.Store
	history int // chunks 1..history are consumed
	next    int // next dataid to publish as supply
}

func benchFindNext(b *testing.B, st *benchState) {
	ctx := context.Background()
	seedSupply(b, st, b.N)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		c, err := st.store.FindNext(ctx, "j", "bench")
		lat = append(lat, time.Since(t0))
		if err != nil || c == nil {
			b.Fatalf("findNext: claim %v, error %v", c, err)
		}
		if n, err := strconv.Atoi(c.DataID); err != nil || n <= st.history {
			b.Fatalf("findNext handed out %s, inside the consumed history", c.DataID)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "p90-ns")
}

// seedHistory creates a schema where job j (src -> out) has consumed
// chunks 1..history: src OUTPUT READY, j's INPUT DONE and OUTPUT READY.
func seedHistory(b *testing.B, history int) *benchState {
	b.Helper()
	ctx := context.Background()
	dsn := testDSN(b)
	schema := freshSchema(b)
	s, err := openStore(ctx, Config{DSN: dsn, Schema: schema}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, d := range []string{"src", "out"} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/" + d + "/{dataid}"}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	seed := `
INSERT INTO status_rows (dataset, dataid, job, role, sortkey, status, attempt, executor, token, fence,
                         lease_expires_at, updated_at, reason, prev_status)
SELECT r.dataset, i::text, r.job, r.role, lpad(length(i::text)::text, 3, '0') || i::text, r.status,
       r.attempt, 'seed', '', i, NULL, now(), '', ''
FROM generate_series(1, $1::int) AS i,
     (VALUES ('src', '', 'OUTPUT', 'READY', 0), ('src', 'j', 'INPUT', 'DONE', 1), ('out', 'j', 'OUTPUT', 'READY', 1))
         AS r(dataset, job, role, status, attempt)`
	if _, err := admin.pool.Exec(ctx, strings.ReplaceAll(seed, "status_rows", schema+".status_rows"), history); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.pool.Exec(ctx, "VACUUM ANALYZE "+schema+".status_rows"); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d consumed chunks (%d status rows) in %s", history, 3*history, time.Since(start).Round(time.Millisecond))
	return &benchState{schema: schema, store: s, history: history, next: history + 1}
}

// seedSupply publishes n more ready chunks after the history, as Publish
// would: src OUTPUT READY plus a candidate for j.
func seedSupply(b *testing.B, st *benchState, n int) {
	b.Helper()
	ctx := context.Background()
	from, to := st.next, st.next+n-1
	st.next += n
	sqls := []string{
		`INSERT INTO status_rows (dataset, dataid, job, role, sortkey, status, attempt, executor, token, fence,
		                         lease_expires_at, updated_at, reason, prev_status)
		 SELECT 'src', i::text, '', 'OUTPUT', lpad(length(i::text)::text, 3, '0') || i::text, 'READY', 0, '', '', 0, NULL, now(), '', ''
		 FROM generate_series($1::int, $2::int) AS i`,
		`INSERT INTO candidates (job, resubmit, sortkey, dataid)
		 SELECT 'j', false, lpad(length(i::text)::text, 3, '0') || i::text, i::text
		 FROM generate_series($1::int, $2::int) AS i`,
	}
	for _, q := range sqls {
		q = strings.ReplaceAll(q, "status_rows", st.schema+".status_rows")
		q = strings.ReplaceAll(q, "candidates", st.schema+".candidates")
		if _, err := admin.pool.Exec(ctx, q, from, to); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := admin.pool.Exec(ctx, "ANALYZE "+st.schema+".candidates"); err != nil {
		b.Fatal(err)
	}
}

// bulkRows is a backendtest.RowWriter inserting status rows straight into
// schema's table, in one statement (seeding benchmarks).
func bulkRows(schema string) backendtest.RowWriter {
	return func(ctx context.Context, rows []backends.StatusRow) error {
		var d, i, j, r, k, st, e, t, f []string
		var a []int32
		var fe []int64
		for _, row := range rows {
			d, i, j, r = append(d, row.Dataset), append(i, row.DataID), append(j, row.Job), append(r, string(row.Role))
			k, st, e = append(k, backends.SortKey(row.DataID)), append(st, string(row.Status)), append(e, row.Executor)
			t, f = append(t, row.Token), append(f, row.ReadFor)
			a, fe = append(a, int32(row.Attempt)), append(fe, row.Fence)
		}
		_, err := admin.pool.Exec(ctx, `INSERT INTO `+schema+`.status_rows (dataset, dataid, job, role, sortkey, status,
			attempt, executor, token, fence, lease_expires_at, updated_at, reason, prev_status, read_for)
			SELECT d, i, j, r, k, s, a, e, t, fe, NULL, now(), '', '', f
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::text[], $10::bigint[], $11::text[])
			  AS x(d, i, j, r, k, s, a, e, t, fe, f)`, d, i, j, r, k, st, a, e, t, fe, f)
		return err
	}
}

// analyzeRows has PostgreSQL vacuum and analyze schema's status rows after
// a bulk seeding, as autovacuum would have by the time a store grew so.
func analyzeRows(b *testing.B, schema string) {
	b.Helper()
	if _, err := admin.pool.Exec(context.Background(), "VACUUM ANALYZE "+schema+".status_rows"); err != nil {
		b.Fatal(err)
	}
}
