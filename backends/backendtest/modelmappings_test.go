package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// These tests check the model's TIME_WINDOW and LATEST sets by hand,
// against a calendar: 2025-12-28 is a Sunday (the end of 2025-W52) and
// 2025-12-29 a Monday (the start of 2026-W01).

func newMappedTestModel() *model {
	m := newTestModel()
	m.expected = modelExpected
	return m
}

func readIDs(rs []mRead) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.dataset+"/"+r.dataid)
	}
	return out
}

func TestModelWindows(t *testing.T) {
	m := newMappedTestModel()
	jr, jk := m.job("jr"), m.job("jk")
	for out, want := range map[string][]string{
		"2025-12-27": {"d/2025-12-27"}, // d starts that day: a shorter window
		"2025-12-28": {"d/2025-12-27", "d/2025-12-28"},
		"2025-12-31": {"d/2025-12-29", "d/2025-12-30", "d/2025-12-31"},
		"2026-01-01": {"d/2025-12-30", "d/2025-12-31", "d/2026-01-01"},
	} {
		require.Equal(t, want, readIDs(m.windowReads(jr, "d", out)), "r/%s", out)
	}
	require.Equal(t, []string{"d/2025-12-27", "d/2025-12-28"}, readIDs(m.windowReads(jk, "d", "2025-W52")),
		"2025-W52 is 2025-12-22 to 28; d starts on the 27th")
	require.Equal(t, []string{"d/2025-12-29", "d/2025-12-30", "d/2025-12-31", "d/2026-01-01", "d/2026-01-02"},
		readIDs(m.windowReads(jk, "d", "2026-W01")), "2026-W01 starts on Monday 2025-12-29; d ends on 2026-01-02")
	require.Empty(t, m.windowReads(jk, "d", "2026-W02"))
}

func TestModelLatest(t *testing.T) {
	m := newMappedTestModel()
	jr := m.job("jr")
	require.Empty(t, m.latestReads(jr, "dim", "2025-12-27"), "no snapshot before dim's start")
	require.Equal(t, []string{"dim/2025-12-31"}, readIDs(m.latestReads(jr, "dim", "2025-12-31")), "none READY: the newest candidate")
	m.publish("dim", "2025-12-29")
	m.publish("dim", "2026-01-01")
	require.Equal(t, []string{"dim/2025-12-29"}, readIDs(m.latestReads(jr, "dim", "2025-12-31")), "not after the output's day")
	require.Equal(t, []string{"dim/2026-01-01"}, readIDs(m.latestReads(jr, "dim", "2026-01-01")))
	require.Equal(t, []string{"dim/2025-12-28"}, readIDs(m.latestReads(jr, "dim", "2025-12-28")))

	// r/2025-12-31 waits for its window of d; its blockers name each
	// missing day, and the snapshot it would read.
	m.publish("d", "2025-12-30")
	_, code, bs := m.claim("jr", "2025-12-31", false)
	require.Equal(t, backends.CodeLocked, code)
	require.Equal(t, normBlockers([]backends.Blocker{
		{Dataset: "d", DataID: "2025-12-29", Kind: backends.BlockerInputNotReady, Status: none},
		{Dataset: "d", DataID: "2025-12-31", Kind: backends.BlockerInputNotReady, Status: none},
	}), bs)
	m.publish("d", "2025-12-29")
	m.publish("d", "2025-12-31")
	c := m.findNext("jr")
	require.NotNil(t, c)
	require.Equal(t, "2025-12-31", c.dataid, "the only day whose window is READY")
	require.Nil(t, m.findNext("jr"))

	// The snapshot is fixed at claim time: a newer one published before
	// the claim ends changes nothing about it.
	m.publish("dim", "2025-12-31")
	require.Equal(t, backends.Code(""), m.end(*c, endComplete))
	require.Equal(t, done, m.status(readKey(jr, mRead{"dim", "2025-12-29"}, "2025-12-31")))
	require.Equal(t, none, m.status(inKey("dim", "2025-12-31", "jr")))
	for _, d := range []string{"2025-12-29", "2025-12-30", "2025-12-31"} {
		require.Equal(t, done, m.status(readKey(jr, mRead{"d", d}, "2025-12-31")), d)
	}

	// The cascade from a day of d reaches every output whose window holds
	// it, and from a snapshot every output that read it.
	changed, code := m.resubmit("d", "2025-12-29", true)
	require.Equal(t, backends.Code(""), code)
	require.ElementsMatch(t, []string{"d", "r"}, changed, "r/2025-12-31 read it; r/2025-12-29 and 30 never ran")
	require.Equal(t, errored, m.status(readKey(jr, mRead{"d", "2025-12-29"}, "2025-12-31")))
	require.Equal(t, done, m.status(readKey(jr, mRead{"dim", "2025-12-29"}, "2025-12-31")))
	changed, code = m.resubmit("dim", "2025-12-29", true)
	require.Equal(t, backends.Code(""), code)
	require.ElementsMatch(t, []string{"dim", "r"}, changed)
	require.Equal(t, errored, m.status(readKey(jr, mRead{"dim", "2025-12-29"}, "2025-12-31")))
}

// TestModelForceDropsRead: a force that supersedes a live claim after a
// newer snapshot became READY reads the new one and gives the old read
// back.
func TestModelForceDropsRead(t *testing.T) {
	m := newMappedTestModel()
	jr := m.job("jr")
	m.publish("dim", "2025-12-28")
	for _, d := range []string{"2025-12-27", "2025-12-28", "2025-12-29"} {
		m.publish("d", d)
	}
	c := m.mustClaim(t, "jr", "2025-12-29")
	old := readKey(jr, mRead{"dim", "2025-12-28"}, "2025-12-29")
	require.Equal(t, running, m.status(old))
	m.publish("dim", "2025-12-29")
	f, code, _ := m.claim("jr", "2025-12-29", true)
	require.Equal(t, backends.Code(""), code)
	require.False(t, m.live(c))
	require.Equal(t, none, m.status(old), "given back")
	require.Equal(t, running, m.status(inKey("dim", "2025-12-29", "jr")))
	require.Equal(t, backends.Code(""), m.end(*f, endRelease))
	for k := range m.rows {
		require.NotEqual(t, backends.RoleInput, k.role, "a release leaves no read: %+v", k)
	}
}
