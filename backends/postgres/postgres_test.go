package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// defaultTestDSN is used when CHUNKLOCK_TEST_POSTGRES is unset.
const defaultTestDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var admin struct {
	once sync.Once
	dsn  string
	set  bool
	pool *pgxpool.Pool
	err  error
}

// testDSN returns the test database's DSN, connecting once. When
// CHUNKLOCK_TEST_POSTGRES is unset and nothing answers at the default
// address the test is skipped; when it is set and the server does not
// answer, the test fails.
func testDSN(t testing.TB) string {
	t.Helper()
	admin.once.Do(func() {
		admin.dsn = os.Getenv("CHUNKLOCK_TEST_POSTGRES")
		admin.set = admin.dsn != ""
		if !admin.set {
			admin.dsn = defaultTestDSN
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		admin.pool, admin.err = pgxpool.New(ctx, admin.dsn)
		if admin.err == nil {
			admin.err = admin.pool.Ping(ctx)
		}
	})
	if admin.err != nil {
		if admin.set {
			t.Fatalf("CHUNKLOCK_TEST_POSTGRES is set but PostgreSQL does not answer: %v", admin.err)
		}
		t.Skipf("PostgreSQL does not answer at %s (%v); set CHUNKLOCK_TEST_POSTGRES to run these tests", defaultTestDSN, admin.err)
	}
	return admin.dsn
}

// freshSchema returns a new random schema name, dropped when the test ends
// (after the stores registered later are closed).
func freshSchema(t testing.TB) string {
	t.Helper()
	testDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "chunklock_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}

// openStore opens the backend of cfg and makes the engine on it, reading
// clock (nil: the database's clock).
func openStore(ctx context.Context, cfg Config, clock backends.Clock) (backends.Store, error) {
	b, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return engine.New(b, engine.WithClock(clock)), nil
}

// nextCandidate reserves the job's first candidate due now, if any.
func nextCandidate(ctx context.Context, tx backends.Tx, job string) (backends.Candidate, bool, error) {
	cs, err := tx.NextCandidates(ctx, job, 1, time.Now())
	if err != nil || len(cs) == 0 {
		return backends.Candidate{}, false, err
	}
	return cs[0], true, nil
}

// openTest opens a store on a fresh schema. The caller closes it.
func openTest(t testing.TB, clock backends.Clock) backends.Store {
	t.Helper()
	s, err := openStore(context.Background(), Config{DSN: testDSN(t), Schema: freshSchema(t)}, clock)
	require.NoError(t, err)
	return s
}

// factory opens a backend on a fresh schema; the suite closes it.
func factory(t *testing.T) backends.Backend {
	b, err := Open(context.Background(), Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	return b
}

func TestConformance(t *testing.T) {
	testDSN(t)
	backendtest.Run(t, factory)
}

func TestConcurrency(t *testing.T) {
	testDSN(t)
	backendtest.RunConcurrency(t, factory)
}

// TestMigrationsConcurrentOpens opens several stores on one new schema at
// once, then once more: every Open succeeds and each migration is recorded
// exactly once.
func TestMigrationsConcurrentOpens(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t)
	ctx := context.Background()
	const n = 6
	stores := make([]backends.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = openStore(ctx, Config{DSN: dsn, Schema: schema}, backends.NewFakeClock(time.Time{}))
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "open %d", i)
		defer stores[i].Close()
	}
	again, err := openStore(ctx, Config{DSN: dsn, Schema: schema}, backends.NewFakeClock(time.Time{}))
	require.NoError(t, err, "opening an up-to-date schema")
	defer again.Close()

	all, err := migrations()
	require.NoError(t, err)
	rows, err := admin.pool.Query(ctx, "SELECT version FROM "+schema+".schema_migrations ORDER BY version")
	require.NoError(t, err)
	var got []int
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		got = append(got, v)
	}
	require.NoError(t, rows.Err())
	var want []int
	for _, m := range all {
		want = append(want, m.version)
	}
	require.Equal(t, want, got)

	// The stores work on the shared schema: one sees what another wrote.
	_, err = stores[0].UpsertDataset(ctx, backends.Dataset{ID: "d"})
	require.NoError(t, err)
	d, err := stores[n-1].Dataset(ctx, "d")
	require.NoError(t, err)
	require.Equal(t, "d", d.ID)
}

// TestNewerSchemaRefused: a server does not run on a schema migrated by a
// newer version.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t)
	ctx := context.Background()
	s, err := openStore(ctx, Config{DSN: dsn, Schema: schema}, backends.NewFakeClock(time.Time{}))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = admin.pool.Exec(ctx, "INSERT INTO "+schema+".schema_migrations (version, name) VALUES (9999, 'future.sql')")
	require.NoError(t, err)
	_, err = openStore(ctx, Config{DSN: dsn, Schema: schema}, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "upgrade the server")
}

// TestEventSeqFollowsCommitOrder: while many transactions record events
// concurrently, a watcher (which advances a seq cursor) receives every
// event exactly once, in seq order. If seq did not grow with commit order,
// the watcher would step over an event committed late with a smaller seq.
func TestEventSeqFollowsCommitOrder(t *testing.T) {
	s := openTest(t, backends.NewFakeClock(time.Time{}))
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	ch, err := s.WatchEvents(ctx, backends.EventFilter{})
	require.NoError(t, err)

	const writers, per = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				_, err := s.Publish(ctx, "src", fmt.Sprintf("%d-%d", w, i))
				if err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
		})
	}
	var got []backends.Event
	timeout := time.After(time.Minute)
	for len(got) < writers*per {
		select {
		case e, ok := <-ch:
			require.True(t, ok, "the watch closed early")
			got = append(got, e)
		case <-timeout:
			t.Fatalf("received %d of %d events", len(got), writers*per)
		}
	}
	wg.Wait()
	for i := 1; i < len(got); i++ {
		require.Greater(t, got[i].Seq, got[i-1].Seq, "events arrive in seq order")
	}
	page, err := s.Events(ctx, backends.EventFilter{First: backends.MaxPageSize})
	require.NoError(t, err)
	require.Equal(t, page.Events, got, "the watcher saw exactly the recorded events")
}

// TestWatchSurvivesReconnect kills the LISTEN connection; the watch goes
// on delivering events, including those another server commits.
func TestWatchSurvivesReconnect(t *testing.T) {
	schema := freshSchema(t)
	s, err := openStore(context.Background(), Config{DSN: testDSN(t), Schema: schema}, backends.NewFakeClock(time.Time{}))
	require.NoError(t, err)
	defer s.Close()
	other, err := openStore(context.Background(), Config{DSN: testDSN(t), Schema: schema}, backends.NewFakeClock(time.Time{}))
	require.NoError(t, err)
	defer other.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	ch, err := s.WatchEvents(ctx, backends.EventFilter{})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	require.Equal(t, "1", recvEvent(t, ch).DataID)

	// Wait until the listener is connected and listening, then kill it.
	const listening = "FROM pg_stat_activity WHERE application_name = $1 AND query = 'LISTEN " + eventsChannel + "'"
	require.Eventually(t, func() bool {
		var n int
		return admin.pool.QueryRow(ctx, "SELECT count(*) "+listening, listenerName(schema)).Scan(&n) == nil && n == 1
	}, time.Minute, 10*time.Millisecond, "the listener never started listening")
	res, err := admin.pool.Exec(ctx, "SELECT pg_terminate_backend(pid) "+listening, listenerName(schema))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.RowsAffected())

	_, err = other.Publish(ctx, "src", "2")
	require.NoError(t, err)
	require.Equal(t, "2", recvEvent(t, ch).DataID)
	require.Eventually(t, func() bool {
		var n int
		return admin.pool.QueryRow(ctx, "SELECT count(*) "+listening, listenerName(schema)).Scan(&n) == nil && n == 1
	}, time.Minute, 10*time.Millisecond, "the listener did not reconnect")

	cancel()
	for range ch { // the channel closes once the context ends
	}
}

func recvEvent(t *testing.T, ch <-chan backends.Event) backends.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		require.True(t, ok, "the watch closed")
		return e
	case <-time.After(time.Minute):
		t.Fatal("no event within a minute")
	}
	return backends.Event{}
}

// TestCloseStopsEverything: Close ends watches, the listener and the
// clock refresher; nothing is left running.
func TestCloseStopsEverything(t *testing.T) {
	testDSN(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := openStore(context.Background(), Config{DSN: testDSN(t), Schema: freshSchema(t)}, nil) // database clock
	require.NoError(t, err)
	ch, err := s.WatchEvents(context.Background(), backends.EventFilter{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	for range ch {
	}
	require.NoError(t, s.Close(), "Close twice")
	err = s.Ping(context.Background())
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "a closed store is UNAVAILABLE: %v", err)
	_, err = s.Datasets(context.Background())
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err))
}

// TestDatabaseClock: the backend's clock, which the engine reads unless
// given another, follows the database clock.
func TestDatabaseClock(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	c := b.Clock()
	var before, after time.Time
	require.NoError(t, admin.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&before))
	now := c.Now()
	require.NoError(t, admin.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&after))
	// Local clock and database clock are the same machine's here, so the
	// estimate lies between two database readings, give or take the
	// measurement error (well under a second).
	require.WithinRange(t, now, before.Add(-time.Second), after.Add(time.Second))
	require.Equal(t, now, now.Truncate(time.Microsecond))
	require.Equal(t, time.UTC, now.Location())
}

// TestUnavailable: an unreachable server, a cancelled context and a lost
// connection are UNAVAILABLE; other driver errors stay internal.
func TestUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String() // nothing listens there once closed
	l.Close()
	_, err = openStore(ctx, Config{DSN: "postgres://postgres@" + closed + "/test?sslmode=disable&connect_timeout=5"}, nil)
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "open on a closed port: %v", err)
	var be *backends.Error
	require.ErrorAs(t, err, &be)
	require.NotContains(t, be.Message, "127.0.0.1", "the message does not echo the DSN")

	s := openTest(t, backends.NewFakeClock(time.Time{}))
	defer s.Close()
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = s.Datasets(cctx)
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err))
	_, err = s.Publish(cctx, "x", "1")
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err))

	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(mapErr(&pgconn.PgError{Code: "08006"}, "x")))
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(mapErr(&pgconn.PgError{Code: "57P01"}, "x")))
	internal := mapErr(&pgconn.PgError{Code: "42P01", Message: `relation "status_rows" does not exist`}, "reading")
	require.Equal(t, backends.CodeInternal, backends.CodeOf(internal))
	require.False(t, errors.As(internal, &be), "a failed statement is not a client-visible error")
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for _, c := range []Config{
		{},
		{DSN: "postgres://h/db", Schema: "Bad-Name"},
		{DSN: "postgres://h/db", Schema: "1abc"},
		{DSN: "postgres://h/db", MaxConns: -1},
		{DSN: "postgres://user:secret@h:notaport/db"},
	} {
		err := c.Validate()
		require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%+v", c)
		require.NotContains(t, err.Error(), "secret", "a DSN error does not echo the password")
	}
}

// TestFindNextPath checks the claim path directly: candidates come in
// (resubmit, shortlex dataid) order and a concurrent transaction skips the
// one another holds instead of waiting for it.
func TestFindNextPath(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		for _, c := range []backends.Candidate{
			{Job: "j", DataID: "10"}, {Job: "j", DataID: "9"}, {Job: "j", DataID: "2", Resubmit: true}, {Job: "k", DataID: "1"},
		} {
			if err := tx.AddCandidate(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}))
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.Update(ctx, func(tx backends.Tx) error {
			c, ok, err := nextCandidate(ctx, tx, "j")
			if err != nil || !ok || c.DataID != "2" || !c.Resubmit {
				return fmt.Errorf("first candidate: %+v %v %v", c, ok, err)
			}
			close(held)
			<-release
			return tx.DropCandidate(ctx, c)
		})
	}()
	<-held
	var order []string
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		c, ok, err := nextCandidate(ctx, tx, "j")
		if err != nil || !ok {
			return fmt.Errorf("second candidate: %v %v", ok, err)
		}
		order = append(order, c.DataID)
		return nil // not dropped: the entry stays in the queue
	}))
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, []string{"9"}, order, "the held candidate is skipped, 9 comes before 10")
	for {
		var c backends.Candidate
		var ok bool
		require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
			var err error
			if c, ok, err = nextCandidate(ctx, tx, "j"); err != nil || !ok {
				return err
			}
			return tx.DropCandidate(ctx, c)
		}))
		if !ok {
			break
		}
		order = append(order, c.DataID)
	}
	require.Equal(t, []string{"9", "9", "10"}, order)
}

// TestFencesIncreasePerChunk: concurrent claims of one chunk (through
// force) get strictly increasing fences in commit order.
func TestFencesIncreasePerChunk(t *testing.T) {
	s := openTest(t, backends.NewFakeClock(time.Time{}))
	defer s.Close()
	ctx := context.Background()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "out"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
	require.NoError(t, err)
	var mu sync.Mutex
	var fences []int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 10 {
				c, err := s.Force(ctx, "j", "1", "w"+strconv.Itoa(w))
				if err != nil {
					t.Errorf("force: %v", err)
					return
				}
				mu.Lock()
				fences = append(fences, c.Fence)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// The live claim is the one with the largest fence, and every other
	// token is stale.
	ch, err := s.Chunk(ctx, "out", "1")
	require.NoError(t, err)
	maxFence := int64(0)
	for _, f := range fences {
		maxFence = max(maxFence, f)
	}
	require.Equal(t, maxFence, ch.Output.Fence, "the last claim committed holds the largest fence")
	seen := map[int64]bool{}
	for _, f := range fences {
		require.False(t, seen[f], "fence %d handed out twice", f)
		seen[f] = true
	}
	require.Len(t, fences, 80)
}
