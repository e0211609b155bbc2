package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// These tests check the reference model on its own, against SPEC by hand,
// so that a disagreement in the model test points at the store.

func newTestModel() *model {
	m := newModel(modelDatasets, modelJobs(), modelDataIDs, epoch)
	m.pools[modelPool] = 2
	return m
}

// TestModelConcurrency: jb's maxConcurrent 1 and the pool ja and jm share
// count live claims only: ended and expired claims hold no slot.
func TestModelConcurrency(t *testing.T) {
	m := newTestModel()
	for _, d := range modelDataIDs {
		require.Equal(t, backends.Code(""), m.publish("src", d))
		require.Equal(t, backends.Code(""), m.publish("src2", d))
	}
	a1 := m.mustClaim(t, "ja", "1")
	a2 := m.mustClaim(t, "ja", "2")
	_, code, bs := m.claim("ja", "10", false)
	require.Equal(t, backends.CodeLocked, code)
	require.Equal(t, wantBlockers("10", []bk{{backends.BlockerConcurrency, "a", "ja", none}}), normBlockers(bs))
	require.Equal(t, backends.Code(""), m.end(a1, endComplete))
	m.mustClaim(t, "ja", "10")
	require.Nil(t, m.findNext("jm"), "the pool is full")
	m.pools[modelPool] = 3
	jm := m.findNext("jm")
	require.NotNil(t, jm, "one more slot")
	require.Equal(t, "1", jm.dataid)
	require.Equal(t, backends.Code(""), m.end(a2, endComplete))
	b1 := m.mustClaim(t, "jb", "2")
	_, code, _ = m.claim("jb", "1", false)
	require.Equal(t, backends.CodeLocked, code, "jb is at maxConcurrent 1")
	m.now = m.now.Add(time.Hour)
	require.False(t, m.live(b1))
	m.mustClaim(t, "jb", "1")
}

func (m *model) mustClaim(t *testing.T, job, dataid string) mClaim {
	t.Helper()
	c, code, bs := m.claim(job, dataid, false)
	require.Equal(t, backends.Code(""), code, "blockers %+v", bs)
	return *c
}

func TestModelFindNextOrder(t *testing.T) {
	m := newTestModel()
	require.Nil(t, m.findNext("ja"))
	for _, d := range []string{"10", "2", "1"} {
		require.Equal(t, backends.Code(""), m.publish("src", d))
	}
	var order []string
	for c := m.findNext("ja"); c != nil; c = m.findNext("ja") {
		order = append(order, c.dataid)
		require.Equal(t, backends.Code(""), m.end(*c, endComplete))
	}
	require.Equal(t, []string{"1", "2", "10"}, order)

	// A resubmitted chunk is claimed again, attempt count reset.
	_, code := m.resubmit("a", "10", false)
	require.Equal(t, backends.Code(""), code)
	c := m.findNext("ja")
	require.Equal(t, "10", c.dataid)
	require.Equal(t, 1, c.attempt)

	// A job without inputs: findNext never takes a new dataid.
	require.Nil(t, m.findNext("jn"))
	g := m.mustClaim(t, "jn", "2")
	require.Equal(t, backends.Code(""), m.end(g, endFail))
	require.Equal(t, "2", m.findNext("jn").dataid)
}

// TestModelSchedule: js claims its due hours, lowest first; NOT_DUE says
// when the next one is due; hours outside the definition are refused.
func TestModelSchedule(t *testing.T) {
	m := newTestModel()
	for _, want := range []string{"2025-12-31T22", "2025-12-31T23"} { // due at 23:00 and 00:00
		c := m.findNext("js")
		require.NotNil(t, c, want)
		require.Equal(t, want, c.dataid)
		m.end(*c, endComplete)
	}
	require.Nil(t, m.findNext("js"))
	_, code, bs := m.claim("js", "2026-01-01T00", false)
	require.Equal(t, backends.CodeLocked, code)
	require.Equal(t, []backends.Blocker{{Dataset: "s", DataID: "2026-01-01T00", Job: "js", Kind: backends.BlockerNotDue,
		Status: none, Until: epoch.Add(time.Hour)}}, bs)
	_, code, _ = m.claim("js", modelOutsideID, true)
	require.Equal(t, backends.CodeInvalidArgument, code, "after the definition's end")
	m.now = m.now.Add(2 * time.Hour)
	c := m.findNext("js")
	require.Equal(t, "2026-01-01T00", c.dataid)
	m.end(*c, endFail) // backs off 30 s
	require.Equal(t, "2026-01-01T01", m.findNext("js").dataid)
	require.Nil(t, m.findNext("js"))
	m.now = m.now.Add(30 * time.Second)
	require.Equal(t, "2026-01-01T00", m.findNext("js").dataid)
}

func TestModelReleaseRestores(t *testing.T) {
	m := newTestModel()
	m.publish("src", "1")
	c := m.mustClaim(t, "ja", "1")
	require.Len(t, m.rows, 3)
	require.Equal(t, backends.Code(""), m.end(c, endRelease))
	require.Len(t, m.rows, 1, "only the published chunk is left")
	require.Equal(t, backends.CodeStaleClaim, m.end(c, endComplete))

	c = m.mustClaim(t, "ja", "1")
	m.end(c, endFail)
	_, code, bs := m.claim("ja", "1", false)
	require.Equal(t, backends.CodeLocked, code)
	require.Equal(t, []backends.Blocker{{Dataset: "a", DataID: "1", Job: "ja", Kind: backends.BlockerBackoff,
		Status: failed, Until: epoch.Add(20 * time.Second)}}, bs, "ja backs off 20 s after its first attempt")
	m.now = m.now.Add(20 * time.Second)
	c = m.mustClaim(t, "ja", "1")
	require.Equal(t, 2, c.attempt)
	f := m.take(m.job("ja"), "1") // a force on top
	require.Equal(t, 3, f.attempt)
	require.False(t, m.live(c), "superseded")
	require.Equal(t, backends.Code(""), m.end(f, endRelease))
	out := m.rows[m.outKey("a", "1")]
	require.Equal(t, failed, out.status)
	require.Equal(t, 2, out.attempt)
	require.Equal(t, errored, m.status(inKey("src", "1", "ja")))
}

func TestModelLeaseAndHold(t *testing.T) {
	m := newTestModel()
	m.publish("src", "1")
	c := m.mustClaim(t, "ja", "1") // lease 30 s, two attempts
	m.now = m.now.Add(29 * time.Second)
	require.Zero(t, m.expire())
	_, code := m.heartbeat(c)
	require.Equal(t, backends.Code(""), code)
	m.now = m.now.Add(30 * time.Second)
	require.Equal(t, backends.CodeStaleClaim, m.end(c, endComplete), "stale once the lease passed")
	require.Equal(t, 1, m.expire())
	require.Equal(t, failed, m.status(m.outKey("a", "1")))
	require.Equal(t, m.now.Add(20*time.Second), m.rows[m.outKey("a", "1")].retryAt, "expiry backs off as a failure")
	require.Nil(t, m.findNext("ja"), "backing off")
	m.now = m.now.Add(20 * time.Second)
	c = *m.findNext("ja")
	m.end(c, endFail)
	require.Equal(t, hold, m.status(m.outKey("a", "1")))
	require.Nil(t, m.findNext("ja"))
	_, code = m.resubmit("a", "1", false)
	require.Equal(t, backends.Code(""), code)
	require.Equal(t, 1, m.findNext("ja").attempt)
}

func TestModelCascade(t *testing.T) {
	m := newTestModel()
	m.publish("src", "1")
	m.publish("src2", "1")
	for _, j := range []string{"ja", "jb", "jm"} {
		c := m.findNext(j)
		require.NotNil(t, c, j)
		m.end(*c, endComplete)
	}
	_, code, bs := m.claim("jb", "1", false)
	require.Equal(t, backends.CodeLocked, code)
	require.Equal(t, wantBlockers("1", []bk{{backends.BlockerOutputLocked, "b", "jb", ready}, {backends.BlockerLocalRead, "a", "jb", done}}), bs)

	changed, code := m.resubmit("src", "1", true)
	require.Equal(t, backends.Code(""), code)
	require.ElementsMatch(t, []string{"src", "a", "b", "m"}, changed)
	for _, k := range []mKey{inKey("src", "1", "ja"), inKey("a", "1", "jb"), inKey("a", "1", "jm")} {
		require.Equal(t, errored, m.status(k), "%+v", k)
	}
	require.Equal(t, done, m.status(inKey("src2", "1", "jm")), "src2 was not invalidated")
	require.Nil(t, m.findNext("jb"))
	require.Nil(t, m.findNext("jm"))
	require.Nil(t, m.findNext("ja"), "src is a source: it waits to be published again")
	m.publish("src", "1")
	c := m.findNext("ja")
	require.NotNil(t, c)
	require.Nil(t, m.findNext("jm"))
	m.end(*c, endComplete)
	require.Equal(t, "1", m.findNext("jm").dataid, "RESUBMIT ignores the DONE lock on src2")

	// A live consumer refuses a cascade and nothing changes.
	before := m.clone()
	_, code = m.resubmit("a", "1", true)
	require.Equal(t, backends.CodeLocked, code)
	require.Equal(t, before, m.rows)
}
