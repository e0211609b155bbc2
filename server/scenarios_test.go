package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// TestSeedScenarios drives the seed notes' scenarios purely through GraphQL:
// the happy path, a dependent job, a failing consumer, and an upstream
// chunk found bad after the fact (resubmit with cascade).
func TestSeedScenarios(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		clock := backends.NewFakeClock(t0)
		s := newStack(t, kind.Open(t, clock, 1)[0])
		keyA, _ := s.define()

		// Scenario 1, happy path: ja finds a/1 READY, claims b/1.
		s.publish("a", "1")
		c := s.findNext(runnerA, "ja", "host-1", keyA)
		require.NotNil(t, c)
		require.Equal(t, "1", c.DataID)
		require.Equal(t, "ja", c.Job)
		require.Equal(t, 1, c.Attempt)
		require.NotNil(t, c.Token)
		require.Equal(t, access{Dataset: "b", DataID: "1", URL: "postgres://wh:5432/sales", Connection: "sslmode=require", Location: "load_date = '1'"}, c.Output)
		require.Equal(t, []access{{Dataset: "a", DataID: "1", URL: "s3://lake", Connection: "region=eu", Location: "s3://lake/a/dt=1/"}}, c.Inputs)
		require.Equal(t, "MODE", c.Env[0].Name)
		require.Equal(t, t0.Add(30*time.Second).Format(time.RFC3339Nano), c.LeaseExpiresAt)

		ch := s.chunk("b", "1")
		require.Equal(t, "RUNNING", ch.Status)
		require.ElementsMatch(t, []lockDoc{
			{Dataset: "b", DataID: "1", Kind: "GLOBAL_WRITE", Job: ptr("ja"), Status: "RUNNING"},
			{Dataset: "b", DataID: "1", Kind: "GLOBAL_READ", Job: ptr("ja"), Status: "RUNNING"},
		}, ch.Locks)
		// Readers see rows, never claim tokens.
		require.Nil(t, ch.Rows[0].Token)
		// While b/1 is RUNNING, jb may not read it.
		var bs []struct{ Dataset, DataID, Kind, Status string }
		s.ok(reader, blockersQ, vars("job", "jb", "id", "1")).field(t, "blockers", &bs)
		require.Equal(t, []struct{ Dataset, DataID, Kind, Status string }{{"b", "1", "INPUT_NOT_READY", "RUNNING"}}, bs)

		s.ok(runnerA, completeQ, vars("t", *c.Token))
		require.Equal(t, "READY", s.chunk("b", "1").Status)
		a1 := s.chunk("a", "1")
		require.Len(t, a1.Rows, 2)
		require.Equal(t, "DONE", a1.Rows[1].Status, "ja's INPUT row on a/1")
		require.Equal(t, []string{"LOCAL_READ"}, a1.Rows[1].Locks)
		// ja keeps its job-local lock on a/1: nothing more to do.
		require.Nil(t, s.findNext(runnerA, "ja", "host-1", ""))

		// Dependent job: jb reads b/1; a second jb instance skips it.
		cb := s.findNext(runnerB, "jb", "host-2", "")
		require.NotNil(t, cb)
		require.Equal(t, "1", cb.DataID)
		require.Nil(t, s.findNext(runnerB, "jb", "host-3", ""))

		// Scenario 2, jb fails: OUTPUT FAILED, INPUT ERROR; the retry is
		// attempt 2 with a greater fence.
		s.ok(runnerB, failQ, vars("t", *cb.Token, "r", "disk full"))
		c1 := s.chunk("c", "1")
		require.Equal(t, "FAILED", c1.Status)
		require.Equal(t, "disk full", c1.Output.Reason)
		require.Equal(t, "ERROR", s.chunk("b", "1").Rows[1].Status)
		cb2 := s.findNext(runnerB, "jb", "host-2", "")
		require.NotNil(t, cb2)
		require.Equal(t, 2, cb2.Attempt)
		require.Greater(t, cb2.Fence, cb.Fence)
		// The failed attempt's token is stale.
		require.Equal(t, "STALE_CLAIM", s.fails(runnerB, completeQ, vars("t", *cb.Token)))
		// jb has maxAttempts 2: a second failure puts c/1 on HOLD.
		s.ok(runnerB, failQ, vars("t", *cb2.Token))
		require.Equal(t, "HOLD", s.chunk("c", "1").Status)
		require.Nil(t, s.findNext(runnerB, "jb", "host-2", ""))

		// Scenario 3: a/1 turns out bad after ja and jb ran. Resubmitting b/1
		// with cascade makes ja re-run first; jb waits for b/1 READY.
		var changed []struct{ Dataset, DataID, Status string }
		s.ok(admin, `mutation { resubmit(dataset: "b", dataid: "1", cascade: true) { dataset dataid status } }`, nil).field(t, "resubmit", &changed)
		require.Equal(t, []struct{ Dataset, DataID, Status string }{{"b", "1", "RESUBMIT"}, {"c", "1", "RESUBMIT"}}, changed,
			"jb failed on b/1 until c/1 went on HOLD: the cascade resubmits c/1 too, with its attempts afresh")
		s.ok(reader, blockersQ, vars("job", "jb", "id", "1")).field(t, "blockers", &bs)
		require.ElementsMatch(t, []struct{ Dataset, DataID, Kind, Status string }{
			{"b", "1", "INPUT_NOT_READY", "RESUBMIT"},
		}, bs)
		ra := s.findNext(runnerA, "ja", "host-1", "")
		require.NotNil(t, ra, "ja re-runs the resubmitted chunk")
		require.Equal(t, "1", ra.DataID)
		s.ok(runnerA, completeQ, vars("t", *ra.Token))
		// Fixing b/1 healed c/1: jb runs again, from attempt 1.
		rb := s.findNext(runnerB, "jb", "host-2", "")
		require.NotNil(t, rb)
		require.Equal(t, 1, rb.Attempt)
		s.ok(runnerB, completeQ, vars("t", *rb.Token))
		require.Equal(t, "READY", s.chunk("c", "1").Status)

		// A full cascade: b/1 and c/1 are both READY and computed; resubmitting
		// a/1 invalidates both, in order.
		s.ok(admin, `mutation { resubmit(dataset: "a", dataid: "1", cascade: true) { dataset } }`, nil).field(t, "resubmit", &changed)
		require.Len(t, changed, 3)
		require.Equal(t, "RESUBMIT", s.chunk("b", "1").Status)
		require.Equal(t, "RESUBMIT", s.chunk("c", "1").Status)
	})
}

func ptr[T any](v T) *T { return &v }
