package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestScheduleAndBackoffAPI: a root job with an hourly definition is
// claimed by findNext once its hours are due; blockers and LOCKED errors
// say NOT_DUE and BACKOFF with their time; StatusRow.retryAt is the retry
// time of a FAILED chunk and null otherwise.
func TestScheduleAndBackoffAPI(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		clock := backends.NewFakeClock(t0)
		s := newStack(t, kind.Open(t, clock, 1)[0])
		s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "hh", "url": "s3://lake", "location": "s3://lake/hh/{dataid}/",
			"partitions": map[string]any{"kind": "HOURLY", "start": "2026-03-01T00"}}))
		s.ok(admin, upsertJobQ, vars("in", map[string]any{"id": "gen", "output": "hh", "retryDelaySeconds": 60}))

		const blockersQ = `query($job: String!, $id: String!) { blockers(job: $job, dataid: $id) { kind dataid until } }`
		var bs []struct {
			Kind, Dataid string
			Until        *string
		}
		s.ok(reader, blockersQ, vars("job", "gen", "id", "2026-03-01T00")).field(t, "blockers", &bs)
		require.Len(t, bs, 1)
		require.Equal(t, "NOT_DUE", bs[0].Kind)
		require.Equal(t, t0.Add(time.Hour).Format(time.RFC3339Nano), *bs[0].Until)
		require.Nil(t, s.findNext(admin, "gen", "e1", ""))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, claimQ, vars("job", "gen", "id", "2026-03-01", "ex", "e1")))

		clock.Advance(time.Hour)
		c := s.findNext(admin, "gen", "e1", "")
		require.NotNil(t, c)
		require.Equal(t, "2026-03-01T00", c.DataID)
		const rowQ = `query($d: String!, $id: String!) { chunk(dataset: $d, dataid: $id) { output { status retryAt } } }`
		var ch struct {
			Output struct {
				Status  string
				RetryAt *string
			}
		}
		s.ok(reader, rowQ, vars("d", "hh", "id", "2026-03-01T00")).field(t, "chunk", &ch)
		require.Nil(t, ch.Output.RetryAt, "null while RUNNING")
		s.ok(admin, failQ, vars("t", *c.Token, "r", "timeout"))
		s.ok(reader, rowQ, vars("d", "hh", "id", "2026-03-01T00")).field(t, "chunk", &ch)
		require.Equal(t, "FAILED", ch.Output.Status)
		retryAt := t0.Add(time.Hour + time.Minute).Format(time.RFC3339Nano)
		require.Equal(t, retryAt, *ch.Output.RetryAt)

		r := s.send(request{who: admin, query: claimQ, vars: vars("job", "gen", "id", "2026-03-01T00", "ex", "e1")})
		require.Equal(t, "LOCKED", r.code(t))
		require.Equal(t, []any{map[string]any{"dataset": "hh", "dataid": "2026-03-01T00", "job": "gen", "kind": "BACKOFF",
			"status": "FAILED", "until": retryAt}}, r.Errors[0].Extensions["blockers"])
		s.ok(reader, blockersQ, vars("job", "gen", "id", "2026-03-01T00")).field(t, "blockers", &bs)
		require.Equal(t, "BACKOFF", bs[0].Kind)
		require.Equal(t, retryAt, *bs[0].Until)
	})
}
