package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

// barrierJob is a job command for `run --parallel`: it notes its dataid as
// started in dir, waits (10 s at most) until want processes have started
// or dir/go exists, fails chunk 5 and succeeds on the others. Waiting for
// want processes to start together proves they ran at once.
func barrierJob(dir string, want int) []string {
	script := `d=` + dir + `; touch "$d/$CHUNKLOCK_DATAID.started"; i=0
while [ "$(ls "$d" | grep -c started)" -lt ` + strconv.Itoa(want) + ` ] && [ ! -e "$d/go" ]; do
  i=$((i+1)); [ $i -lt 200 ] || { echo "only $(ls "$d" | grep -c started) started" >&2; exit 1; }; sleep 0.05
done
echo "did $CHUNKLOCK_DATAID"; [ "$CHUNKLOCK_DATAID" != 5 ] || { echo "chunk 5 is bad" >&2; exit 3; }`
	return []string{"sh", "-c", script}
}

// states reads the OUTPUT status of out's chunks, by dataid.
func states(t *testing.T, api *client.Client) map[string]string {
	t.Helper()
	rows, err := api.Chunks(t.Context(), client.ChunkFilter{Dataset: "out", Role: "OUTPUT"})
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range rows {
		got[r.DataID] = r.Status
	}
	return got
}

// TestRunParallel: `run --loop --parallel 4` against a real server runs
// four job processes at once (each waits for four to have started),
// completes and fails them by their exit (chunk 5 at each of its three
// attempts), and works through every chunk.
func TestRunParallel(t *testing.T) {
	t.Parallel()
	url, api := serveMemory(t, func(h http.Handler) http.Handler { return h })
	var ids []string
	for i := 2; i <= 10; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	require.NoError(t, api.Publish(t.Context(), "in", ids))
	dir := t.TempDir()
	var stdout, stderr lockedBuffer
	code := run(t.Context(), append([]string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "4", "--"},
		barrierJob(dir, 4)...), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stderr.String(), "nothing left to do: 9 completed, 3 failed, 0 lost")
	want := map[string]string{}
	for i := 1; i <= 10; i++ {
		want[strconv.Itoa(i)] = "READY"
	}
	want["5"] = "HOLD" // failed at each of the job's 3 attempts
	require.Equal(t, want, states(t, api))
	require.Equal(t, 12, strings.Count(stdout.String(), "did "), stdout.String())
	rows, err := api.Chunks(t.Context(), client.ChunkFilter{Dataset: "out", From: "5", To: "5", Role: "OUTPUT"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Contains(t, rows[0].Reason, "chunk 5 is bad", "the failure's reason is the stderr tail")
}

// TestRunParallelStopWaits: a `run --parallel` runner told to stop claims
// nothing more and waits for its running processes, which it still ends
// by their exit.
func TestRunParallelStopWaits(t *testing.T) {
	t.Parallel()
	url, api := serveMemory(t, func(h http.Handler) http.Handler { return h })
	require.NoError(t, api.Publish(t.Context(), "in", []string{"2", "3", "4", "5", "6", "7"}))
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "3", "--"},
			barrierJob(dir, 99)...), &stdout, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; n < 3; {
		require.True(t, time.Now().Before(deadline), "three processes never started:\n%s", stderr.String())
		time.Sleep(20 * time.Millisecond)
		m, _ := filepath.Glob(filepath.Join(dir, "*.started"))
		n = len(m)
	}
	cancel()
	for !strings.Contains(stderr.String(), "waiting for 3 running job processes") {
		require.True(t, time.Now().Before(deadline), "the runner did not start waiting:\n%s", stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	select {
	case code := <-done:
		require.NotEqual(t, 0, code, "a stopped runner does not exit 0")
	case <-time.After(30 * time.Second):
		t.Fatalf("the runner did not finish:\n%s", stderr.String())
	}
	require.Equal(t, map[string]string{"1": "READY", "2": "READY", "3": "READY"}, states(t, api),
		"the three running were completed, nothing more claimed:\n%s", stderr.String())
}

// TestRunParallelStopDuringClaim: a `run --parallel` runner told to stop
// while its claimNext is on the way waits for the answer and releases the
// claims the server made, instead of dropping the request and leaving them
// RUNNING until their leases pass.
func TestRunParallelStopDuringClaim(t *testing.T) {
	t.Parallel()
	committed, answer := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			if !bytes.Contains(body, []byte("claimNext")) {
				h.ServeHTTP(w, req)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req.WithContext(context.WithoutCancel(req.Context())))
			once.Do(func() { close(committed) })
			<-answer
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	}
	url, api := serveMemory(t, hold)
	require.NoError(t, api.Publish(t.Context(), "in", []string{"2", "3"}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "2", "--", "true"}, &stdout, &stderr)
	}()
	select {
	case <-committed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no claimNext reached the server:\n%s", stderr.String())
	}
	require.Equal(t, map[string]string{"1": "RUNNING", "2": "RUNNING"}, states(t, api), "the server claimed two chunks")
	cancel()
	time.Sleep(200 * time.Millisecond) // the stop reaches the runner before the answer
	close(answer)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the runner did not finish:\n%s", stderr.String())
	}
	for id, st := range states(t, api) {
		require.NotEqual(t, "RUNNING", st, "chunk %s is left RUNNING:\n%s", id, stderr.String())
	}
}

// TestRunParallelClaimsWhileEnding: the endings of a `run --parallel`
// runner go beside its claims: while the server holds its first
// completeMany, the slots its processes freed are claimed for again (a
// runner ending and claiming in turn would send no claimNext until the
// completeMany is answered, and this test would wait out its 10 s).
func TestRunParallelClaimsWhileEnding(t *testing.T) {
	t.Parallel()
	var held, holding atomic.Bool // the first completeMany came; it is being held
	var once sync.Once
	claimedMeanwhile := make(chan struct{})
	hold := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			switch {
			case bytes.Contains(body, []byte("completeMany")) && held.CompareAndSwap(false, true):
				holding.Store(true)
				select {
				case <-claimedMeanwhile:
				case <-time.After(10 * time.Second):
				}
				holding.Store(false)
			case bytes.Contains(body, []byte("claimNext")) && holding.Load():
				once.Do(func() { close(claimedMeanwhile) })
			}
			h.ServeHTTP(w, req)
		})
	}
	url, api := serveMemory(t, hold)
	require.NoError(t, api.Publish(t.Context(), "in", []string{"2", "3", "4", "5", "6"}))
	var stdout, stderr lockedBuffer
	code := run(t.Context(), []string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "2", "--", "true"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	select {
	case <-claimedMeanwhile:
	default:
		t.Fatalf("no claimNext was sent while a completeMany was on its way:\n%s", stderr.String())
	}
	for id, st := range states(t, api) {
		require.Equal(t, "READY", st, "chunk %s:\n%s", id, stderr.String())
	}
	require.Contains(t, stderr.String(), "nothing left to do: 6 completed")
}

// TestRunParallelBoundsWhatItHasNotEnded: while the server holds a `run
// --parallel 40` runner's first completeMany, the runner claims for the
// slots its processes freed, but holds at most one call's worth of claims
// whose process exited (1,000) beside its slots: it does not claim the
// whole queue meanwhile. Once the ending comes back, what waited goes in
// batches a call accepts (more than 1,000 tokens would be refused), and
// every chunk ends READY.
func TestRunParallelBoundsWhatItHasNotEnded(t *testing.T) {
	t.Parallel()
	var held atomic.Bool
	release := make(chan struct{})
	hold := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("completeMany")) && held.CompareAndSwap(false, true) {
				select {
				case <-release:
				case <-time.After(60 * time.Second):
				}
			}
			h.ServeHTTP(w, req)
		})
	}
	url, api := serveMemory(t, hold)
	const parallel, chunks = 40, 1201 // dataid 1 is published already
	var ids []string
	for i := 2; i <= chunks; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	require.NoError(t, api.Publish(t.Context(), "in", ids))
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", strconv.Itoa(parallel), "--", "true"}, &stdout, &stderr)
	}()
	running := func() int {
		n := 0
		for _, st := range states(t, api) {
			if st == "RUNNING" {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return held.Load() && running() >= 1000 }, 50*time.Second, 50*time.Millisecond,
		"it claims beside the held ending:\n%s", stderr.String())
	time.Sleep(time.Second) // it would claim on in this time
	n := running()
	require.LessOrEqual(t, n, parallel+1000, "at most its slots and a call's worth of claims not ended:\n%s", stderr.String())
	require.Less(t, n, chunks, "it stopped claiming before the queue was empty")
	close(release)
	require.Equal(t, 0, <-done, stderr.String())
	for id, st := range states(t, api) {
		require.Equal(t, "READY", st, "chunk %s", id)
	}
	require.Contains(t, stderr.String(), "nothing left to do: 1201 completed")
}

// TestRunParallelHeartbeatsWhatWaitsToEnd: while an ending is slow, the
// claims it carries and the claims waiting for the next one are
// heartbeated with the live ones, so that none passes its lease before its
// ending: every chunk is completed by this runner, none lost. When the
// heartbeats' answers are lost (the server extended the leases, the runner
// cannot tell), the waiting claims are ended all the same: the server
// decides, and finds them live.
func TestRunParallelHeartbeatsWhatWaitsToEnd(t *testing.T) {
	t.Parallel()
	for name, answersLost := range map[string]bool{"answered": false, "answers lost": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const lease = 4 * time.Second
			var held atomic.Bool
			hold := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					body, _ := io.ReadAll(req.Body)
					req.Body = io.NopCloser(bytes.NewReader(body))
					if bytes.Contains(body, []byte("completeMany")) && held.CompareAndSwap(false, true) {
						select { // the first ending takes two and a half leases
						case <-time.After(lease * 5 / 2):
						case <-req.Context().Done():
						}
					}
					if answersLost && bytes.Contains(body, []byte("heartbeatMany")) {
						h.ServeHTTP(httptest.NewRecorder(), req) // applied, its answer dropped
						http.Error(w, "answer lost", http.StatusBadGateway)
						return
					}
					h.ServeHTTP(w, req)
				})
			}
			url, api := serveMemory(t, hold)
			ctx := t.Context()
			_, err := api.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", LeaseSeconds: int(lease / time.Second)})
			require.NoError(t, err)
			const chunks = 20 // dataid 1 is published already
			var ids []string
			for i := 2; i <= chunks; i++ {
				ids = append(ids, strconv.Itoa(i))
			}
			require.NoError(t, api.Publish(ctx, "in", ids))
			var stdout, stderr lockedBuffer
			code := run(ctx, []string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "4", "--", "true"}, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			require.True(t, held.Load(), "the first ending was held")
			if answersLost {
				require.Contains(t, stderr.String(), "heartbeat failed", "the heartbeats' answers were lost")
			}
			require.Contains(t, stderr.String(), fmt.Sprintf("nothing left to do: %d completed, 0 failed, 0 lost", chunks))
			for id, st := range states(t, api) {
				require.Equal(t, "READY", st, "chunk %s", id)
			}
		})
	}
}

// TestRunParallelEndingNotRecorded: an ending the server cannot take for
// the whole --retry-for is said once for each batch (three processes that
// end together: the first batch and the one sent after it), and once for
// each chunk as not recorded and counted lost; never as a claim an
// operator forced or whose lease expired. The chunks stay RUNNING until
// their lease passes.
func TestRunParallelEndingNotRecorded(t *testing.T) {
	t.Parallel()
	refuse := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("completeMany")) {
				http.Error(w, "no upstream", http.StatusBadGateway)
				return
			}
			h.ServeHTTP(w, req)
		})
	}
	url, api := serveMemory(t, refuse)
	ctx := t.Context()
	_, err := api.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out"})
	require.NoError(t, err)
	require.NoError(t, api.Publish(ctx, "in", []string{"2", "3"})) // 1 is published already
	var stdout, stderr lockedBuffer
	args := append([]string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "3", "--retry-for", "1s", "--"}, barrierJob(t.TempDir(), 3)...)
	code := run(ctx, args, &stdout, &stderr)
	logs := stderr.String()
	require.Equal(t, exitOK, code, "--loop ends 0 when nothing is left: %s", logs)
	said := regexp.MustCompile(`completing (\d) claim\(s\): `).FindAllStringSubmatch(logs, -1)
	n, most := 0, 0
	for _, m := range said { // the error once a batch, not once a chunk
		k, _ := strconv.Atoi(m[1])
		n, most = n+k, max(most, k)
	}
	require.Equal(t, 3, n, logs)
	require.GreaterOrEqual(t, most, 2, "a batch of several chunks is said once: %s", logs)
	for _, id := range []string{"1", "2", "3"} {
		require.Contains(t, logs, "the ending of j "+id+" was not recorded (the server could not be reached for --retry-for 1s): counted as lost", logs)
	}
	require.NotContains(t, logs, "expired or forced", logs)
	require.Contains(t, logs, "0 completed, 0 failed, 3 lost", logs)
	got := states(t, api)
	require.Len(t, got, 3)
	for id, st := range got {
		require.Equal(t, "RUNNING", st, "chunk %s: its lease has not passed", id)
	}
}

// TestRunParallelFailureWordingFollowsAnApply: the job's maxAttempts is
// lowered from 3 to 1 while four processes of `run --parallel 4` run; they
// fail, and each failure is reported as the last attempt (the server put
// the chunks on HOLD). The pool reads the job once per batch of failures,
// beside its loop: never once per failure.
func TestRunParallelFailureWordingFollowsAnApply(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	jobReads, failCalls := 0, 0
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			if bytes.Contains(body, []byte("job(id:")) {
				jobReads++
			}
			if bytes.Contains(body, []byte("failMany(")) {
				failCalls++
			}
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}
	url, api := serveMemory(t, count)
	ctx := t.Context()
	_, err := api.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", MaxAttempts: 3})
	require.NoError(t, err)
	require.NoError(t, api.Publish(ctx, "in", []string{"2", "3", "4"}))
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	script := `touch "$0/$CHUNKLOCK_DATAID.started"; while [ ! -e "$0/go" ]; do sleep 0.02; done; exit 1`
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--parallel", "4", "--", "sh", "-c", script, dir}, &stdout, &stderr)
	}()
	started := func() int {
		n := 0
		for _, id := range []string{"1", "2", "3", "4"} {
			if _, err := os.Stat(filepath.Join(dir, id+".started")); err == nil {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return started() == 4 }, 30*time.Second, 20*time.Millisecond)
	_, err = api.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", MaxAttempts: 1})
	require.NoError(t, err)
	mu.Lock()
	readsBefore := jobReads
	mu.Unlock()
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("run --parallel did not end")
	}
	require.Equal(t, 4, strings.Count(stderr.String(), "(attempt 1 of 1, the last: the chunk is on HOLD until resubmitted)"), stderr.String())
	require.Equal(t, map[string]string{"1": "HOLD", "2": "HOLD", "3": "HOLD", "4": "HOLD"}, states(t, api))
	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, jobReads-readsBefore, failCalls, "the job is read once per batch of failures at most")
}
