package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/open"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// standbyPair is a PostgreSQL primary and its synchronous streaming standby
// on 127.0.0.1, made for one test by scripts/pg-standby.sh.
type standbyPair struct {
	script      string
	dir         string
	primaryPort int
	standbyPort int
}

// startStandbyPair starts a primary and a standby on free ports in a new
// directory, and stops and removes both when the test ends (a watchdog of
// the script does it too should the test binary die first). Without the
// PostgreSQL server tools the test is skipped, except in CI (CI=true),
// where it fails.
func startStandbyPair(t *testing.T) *standbyPair {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "pg-standby.sh"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, "start", "--owner", strconv.Itoa(os.Getpid()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 && os.Getenv("CI") != "true" {
			t.Skipf("no PostgreSQL server tools to build a primary and a standby: %s", strings.TrimSpace(stderr.String()))
		}
		t.Fatalf("scripts/pg-standby.sh start: %v\n%s", err, stderr.String())
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	p := &standbyPair{script: script, dir: vars["PG_STANDBY_DIR"]}
	p.primaryPort, _ = strconv.Atoi(vars["PG_PRIMARY_PORT"])
	p.standbyPort, _ = strconv.Atoi(vars["PG_STANDBY_PORT"])
	if p.dir == "" || p.primaryPort == 0 || p.standbyPort == 0 {
		t.Fatalf("scripts/pg-standby.sh start printed %q, want PG_STANDBY_DIR, PG_PRIMARY_PORT and PG_STANDBY_PORT", out)
	}
	t.Cleanup(func() {
		if err := p.run("stop"); err != nil {
			t.Errorf("stopping the primary and the standby: %v", err)
		}
	})
	return p
}

// run runs one of the script's commands on the pair.
func (p *standbyPair) run(command string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", p.script, command, p.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/pg-standby.sh %s: %w\n%s", command, err, out)
	}
	return nil
}

// connect opens a connection of its own to one node, for the test's checks.
func connect(t *testing.T, port int) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&application_name=failover-test-check", port))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// storeApp is the application_name of the store's connections, by which
// the test finds out which node they went to.
const storeApp = "chunklock-failover-test"

// sessions counts the store's connections on the node conn is connected to
// and tells whether that node is a standby.
func sessions(t *testing.T, conn *pgx.Conn) (n int, inRecovery bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_stat_activity WHERE application_name = $1), pg_is_in_recovery()", storeApp).Scan(&n, &inRecovery)
	require.NoError(t, err)
	return n, inRecovery
}

// eventually calls f until it returns true, failing the test with what
// after the deadline.
func eventually(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call bounds one store operation in time.
func call[T any](f func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f(ctx)
}

func findNext(st backends.Store, executor string) (*backends.Claim, error) {
	return call(func(ctx context.Context) (*backends.Claim, error) { return st.FindNext(ctx, "j", executor) })
}

func complete(st backends.Store, token string) error {
	_, err := call(func(ctx context.Context) (struct{}, error) { return struct{}{}, st.Complete(ctx, token) })
	return err
}

// TestFailoverTwoHostURL runs a store on a primary and its synchronous
// standby through a two-host URL that names the standby first, crashes the
// primary while a worker claims and completes chunks, promotes the
// standby, and checks that the store follows it: operations answer
// UNAVAILABLE during the switch and then succeed on the promoted node,
// every completion acknowledged before or during the crash is still READY,
// and every chunk ends READY (a claim whose answer was lost in the crash is
// reclaimable after its lease), with an event for each seen by a watcher
// that lived through the switch.
func TestFailoverTwoHostURL(t *testing.T) {
	pair := startStandbyPair(t)
	primary, standby := connect(t, pair.primaryPort), connect(t, pair.standbyPort)

	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5&application_name=%s",
		pair.standbyPort, pair.primaryPort, storeApp)
	clock := backends.NewFakeClock(time.Time{})
	st, err := call(func(ctx context.Context) (backends.Store, error) {
		return open.Open(ctx, url, open.Options{Clock: clock, PostgresSchema: "chunklock"})
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })

	const chunks, lease = 100, time.Minute
	setUpFailoverPipeline(t, st, chunks, lease)
	watched := watchReady(t, st)
	requireOnPrimary(t, primary, standby)

	// Completed before the crash, and one claim taken before it.
	var before []string
	for range 10 {
		before = append(before, claimAndComplete(t, st))
	}
	inflight, err := findNext(st, "main")
	require.NoError(t, err)
	require.NotNil(t, inflight)

	w := startWorker(st)
	t.Cleanup(w.halt)
	eventually(t, 20*time.Second, "the worker completes chunks", func() bool { return len(w.stats().completed) >= 5 })

	require.NoError(t, pair.run("crash-primary"))
	crashed := time.Now()
	err = complete(st, inflight.Token)
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "with the primary down and the standby read-only: %v", err)
	eventually(t, 20*time.Second, "the worker sees UNAVAILABLE", func() bool { return w.stats().unavailable > 0 })

	require.NoError(t, pair.run("promote"))
	promoted := time.Now()
	completeThroughOutage(t, st, inflight.Token)
	recovered := time.Now()
	ackedThen := len(w.stats().completed)
	eventually(t, 20*time.Second, "the worker completes chunks on the promoted standby", func() bool { return len(w.stats().completed) >= ackedThen+3 })
	w.halt()
	ws := w.stats()
	require.Empty(t, ws.errs, "the worker saw errors other than UNAVAILABLE")
	t.Logf("crash to promote %s, promote to first completion %s; worker: %d completions acknowledged, %d UNAVAILABLE answers",
		promoted.Sub(crashed).Round(time.Millisecond), recovered.Sub(promoted).Round(time.Millisecond), len(ws.completed), ws.unavailable)

	n, inRecovery := sessions(t, standby)
	require.False(t, inRecovery, "the standby was promoted")
	require.Positive(t, n, "the store's connections are on the promoted standby")

	// Synchronous commit: nothing acknowledged was lost in the crash.
	for _, d := range append(append(before, inflight.DataID), ws.completed...) {
		requireStatus(t, st, d, backends.StatusReady)
	}

	// Claims whose answer was lost in the crash come back after their lease.
	clock.Advance(lease + time.Second)
	drainAll(t, st, chunks)
	eventually(t, 20*time.Second, "the watcher sees every chunk become READY", func() bool { return watched.count() == chunks })
	require.NoError(t, watched.err())
}

// requireOnPrimary checks that the standby streams synchronously and that
// the store's connections are on the primary only.
func requireOnPrimary(t *testing.T, primary, standby *pgx.Conn) {
	t.Helper()
	var syncState string
	require.NoError(t, primary.QueryRow(context.Background(), "SELECT string_agg(sync_state, ',') FROM pg_stat_replication").Scan(&syncState))
	require.Equal(t, "sync", syncState, "the standby streams synchronously")
	n, inRecovery := sessions(t, primary)
	require.False(t, inRecovery)
	require.Positive(t, n, "the store's connections are on the primary")
	_, inRecovery = sessions(t, standby)
	require.True(t, inRecovery)
	// A connection being opened tries the standby first, checks that it
	// is read-only and leaves: such a probe may be seen for a moment, a
	// connection that stays may not.
	eventually(t, 10*time.Second, "target_session_attrs=read-write: no connection of the store stays on the standby listed first", func() bool {
		n, _ := sessions(t, standby)
		return n == 0
	})
}

// drainAll fails the claims whose lease passed, claims and completes
// whatever is left, and checks that every one of the chunks is READY.
func drainAll(t *testing.T, st backends.Store, chunks int) {
	t.Helper()
	_, err := call(st.ExpireLeases)
	require.NoError(t, err)
	drained := 0
	for {
		c, err := findNext(st, "main")
		require.NoError(t, err)
		if c == nil {
			break
		}
		require.NoError(t, complete(st, c.Token))
		drained++
		require.LessOrEqual(t, drained, chunks, "findNext keeps handing out chunks")
	}
	t.Logf("%d chunks completed after the worker stopped", drained)
	page, err := call(func(ctx context.Context) (backends.ChunkPage, error) {
		return st.Chunks(ctx, backends.ChunkFilter{Dataset: "out", First: backends.MaxPageSize})
	})
	require.NoError(t, err)
	require.Len(t, page.Rows, chunks)
	for _, r := range page.Rows {
		require.Equal(t, backends.StatusReady, r.Status, "chunk %s", r.DataID)
	}
}

// setUpFailoverPipeline makes a job j from src to out and publishes
// chunks chunks of src.
func setUpFailoverPipeline(t *testing.T, st backends.Store, chunks int, lease time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range []string{"src", "out"} {
		_, err := st.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err := st.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out", LeaseSeconds: int(lease / time.Second)})
	require.NoError(t, err)
	for i := range chunks {
		_, err := st.Publish(ctx, "src", fmt.Sprintf("%03d", i))
		require.NoError(t, err)
	}
}

func claimAndComplete(t *testing.T, st backends.Store) string {
	t.Helper()
	c, err := findNext(st, "main")
	require.NoError(t, err)
	require.NotNil(t, c)
	require.NoError(t, complete(st, c.Token))
	return c.DataID
}

// completeThroughOutage retries a completion while the store answers
// UNAVAILABLE, as a runner does; it must then succeed.
func completeThroughOutage(t *testing.T, st backends.Store, token string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := complete(st, token)
		if err == nil {
			return
		}
		require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "completing through the switch: %v", err)
		require.True(t, time.Now().Before(deadline), "the store still answers UNAVAILABLE 30s after the promotion: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
}

func requireStatus(t *testing.T, st backends.Store, dataid string, want backends.Status) {
	t.Helper()
	c, err := call(func(ctx context.Context) (backends.ChunkDetail, error) { return st.Chunk(ctx, "out", dataid) })
	require.NoError(t, err)
	require.NotNil(t, c.Output, "chunk out/%s has no OUTPUT row", dataid)
	require.Equal(t, want, c.Output.Status, "chunk out/%s", dataid)
}

// worker claims and completes chunks in a loop, retrying an operation
// that answers UNAVAILABLE the way a runner does.
type worker struct {
	st   backends.Store
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu sync.Mutex
	s  workerStats
}

type workerStats struct {
	completed   []string // dataids whose completion was acknowledged
	unavailable int
	errs        []error
}

func startWorker(st backends.Store) *worker {
	w := &worker{st: st, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for w.running() {
			w.cycle()
		}
	}()
	return w
}

func (w *worker) running() bool {
	select {
	case <-w.stop:
		return false
	default:
		return true
	}
}

// halt stops the worker and waits for it.
func (w *worker) halt() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

func (w *worker) stats() workerStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.s
	s.completed = append([]string(nil), s.completed...)
	s.errs = append([]error(nil), s.errs...)
	return s
}

// note records the outcome of one call; it returns false when the call
// must be retried (UNAVAILABLE) or gave up (another error).
func (w *worker) note(what string, err error) bool {
	if err == nil {
		return true
	}
	w.mu.Lock()
	if backends.CodeOf(err) == backends.CodeUnavailable {
		w.s.unavailable++
	} else {
		w.s.errs = append(w.s.errs, fmt.Errorf("%s: %w", what, err))
	}
	w.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	return false
}

func (w *worker) cycle() {
	c, err := findNext(w.st, "worker")
	if !w.note("findNext", err) || c == nil {
		return
	}
	for w.running() {
		// A first try that committed but whose answer was lost is answered
		// nil again by the retry (SPEC §3, "Retries are safe"): a
		// STALE_CLAIM here is an error the test reports.
		err := complete(w.st, c.Token)
		if w.note("complete", err) {
			w.mu.Lock()
			w.s.completed = append(w.s.completed, c.DataID)
			w.mu.Unlock()
			return
		}
		if backends.CodeOf(err) != backends.CodeUnavailable {
			return
		}
	}
}

// readyWatch collects, from one event watch, the output chunks that
// became READY.
type readyWatch struct {
	mu    sync.Mutex
	ready map[string]int64 // dataid -> seq
	last  int64
	bad   error
}

func watchReady(t *testing.T, st backends.Store) *readyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events, err := st.WatchEvents(ctx, backends.EventFilter{Dataset: "out"})
	require.NoError(t, err)
	w := &readyWatch{ready: map[string]int64{}}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for e := range events {
			w.add(e)
		}
	}()
	return w
}

func (w *readyWatch) add(e backends.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Seq <= w.last && w.bad == nil {
		w.bad = fmt.Errorf("event seq %d after %d: out of order or twice", e.Seq, w.last)
	}
	w.last = e.Seq
	if e.Role == backends.RoleOutput && e.To == backends.StatusReady {
		if _, dup := w.ready[e.DataID]; dup && w.bad == nil {
			w.bad = fmt.Errorf("chunk out/%s became READY twice", e.DataID)
		}
		w.ready[e.DataID] = e.Seq
	}
}

func (w *readyWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ready)
}

func (w *readyWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}
