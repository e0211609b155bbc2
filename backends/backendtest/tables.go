package backendtest

import (
	"errors"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// lockTableTests check every row of both status → lock tables of SPEC §2,
// through Chunk().Locks, Locks, Blockers and what claims do.
var lockTableTests = []testCase{
	{"OutputLockTable", (*suite).testOutputLockTable},
	{"InputLockTable", (*suite).testInputLockTable},
}

const (
	gr = backends.LockGlobalRead
	gw = backends.LockGlobalWrite
	lr = backends.LockLocalRead
)

// testOutputLockTable: chunk a/1 is produced by ja (src → a) and read by jb
// (a → b). For each OUTPUT status of a/1 it checks the derived locks, the
// blockers of the producer and of the consumer, and that the producer (and
// the consumer) can claim exactly when the table says the chunk is free for
// them — once through Claim and once through FindNext.
func (s *suite) testOutputLockTable(t *testing.T) {
	rows := []outputLockRow{
		{"NoRow", func(b *bundle) {}, none, nil, true, false},
		{"RUNNING", func(b *bundle) { b.claim("ja", "1") }, running, []backends.LockKind{gw, gr}, false, false},
		{"READY", func(b *bundle) { b.run("ja", "1") }, ready, []backends.LockKind{gw}, false, true},
		{"FAILED", func(b *bundle) { b.fail(b.claim("ja", "1"), "boom") }, failed, []backends.LockKind{gr}, true, false},
		{"RESUBMIT", func(b *bundle) {
			b.run("ja", "1")
			_, err := b.s.Resubmit(b.ctx, "a", "1", false)
			require.NoError(b.t, err)
		}, resubmit, []backends.LockKind{gr}, true, false},
		{"HOLD", func(b *bundle) {
			b.run("ja", "1")
			_, err := b.s.Hold(b.ctx, "a", "1", "bad data")
			require.NoError(b.t, err)
		}, hold, []backends.LockKind{gw, gr}, false, false},
	}
	for _, row := range rows {
		for _, via := range []string{"Claim", "FindNext"} {
			t.Run(row.name+"/"+via, func(t *testing.T) {
				b := s.setup(t)
				b.pipeline()
				b.publish("src", "1")
				row.setup(b)
				row.checkLocks(t, b)
				// The consumer first: its claim does not change a/1's OUTPUT row.
				if via == "Claim" {
					row.checkClaims(t, b)
					return
				}
				_, got := b.next("jb")
				require.Equal(t, row.consumerFree, got == "1", "consumer findNext got %q", got)
				_, got = b.next("ja")
				require.Equal(t, row.producerFree, got == "1", "producer findNext got %q", got)
			})
		}
	}
}

// outputLockRow is one row of the OUTPUT lock table.
type outputLockRow struct {
	name         string
	setup        func(b *bundle)
	status       backends.Status
	locks        []backends.LockKind
	producerFree bool
	consumerFree bool
}

// checkLocks checks a/1's status, its derived locks and the blockers of
// its producer and its consumer.
func (row outputLockRow) checkLocks(t *testing.T, b *bundle) {
	require.Equal(t, row.status, b.status("a", "1"))
	var want []lk
	for _, k := range row.locks {
		want = append(want, lk{"a", "1", k, "ja", row.status})
	}
	chunkLocks := []backends.Lock{}
	for _, l := range b.chunk("a", "1").Locks {
		if l.Kind != lr { // the consumer's local lock is the other table's business
			chunkLocks = append(chunkLocks, l)
		}
	}
	requireLocks(t, chunkLocks, want...)
	locks, err := b.s.Locks(b.ctx, backends.LockFilter{Dataset: "a", Job: "ja"})
	require.NoError(t, err)
	requireLocks(t, locks, want...)

	// Producer side.
	bs, err := b.s.Blockers(b.ctx, "ja", "1")
	require.NoError(t, err)
	require.Equal(t, !row.producerFree, hasBlocker(bs, backends.BlockerOutputLocked, "a", row.status),
		"producer blockers %+v", bs)
	// Consumer side.
	bs, err = b.s.Blockers(b.ctx, "jb", "1")
	require.NoError(t, err)
	if row.consumerFree {
		requireBlockers(t, "1", bs)
	} else {
		requireBlockers(t, "1", bs, bk{backends.BlockerInputNotReady, "a", "ja", row.status})
	}
}

// checkClaims claims for the consumer, then for the producer, through
// Claim.
func (row outputLockRow) checkClaims(t *testing.T, b *bundle) {
	c, err := b.s.Claim(b.ctx, "jb", "1", executor)
	if row.consumerFree {
		require.NoError(t, err)
		require.Equal(t, "1", c.DataID)
	} else {
		requireLocked(t, err, "1", bk{backends.BlockerInputNotReady, "a", "ja", row.status})
	}
	c, err = b.s.Claim(b.ctx, "ja", "1", executor)
	if row.producerFree {
		require.NoError(t, err)
		require.Equal(t, "1", c.DataID)
		require.Equal(t, running, b.status("a", "1"))
	} else {
		requireCode(t, err, backends.CodeLocked)
		require.True(t, hasBlocker(blockersOf(err), backends.BlockerOutputLocked, "a", row.status), "blockers %+v", blockersOf(err))
		require.Equal(t, row.status, b.status("a", "1"), "a refused claim changes nothing")
	}
}

func hasBlocker(bs []backends.Blocker, kind backends.BlockerKind, dataset string, status backends.Status) bool {
	for _, b := range bs {
		if b.Kind == kind && b.Dataset == dataset && b.Status == status {
			return true
		}
	}
	return false
}

// testInputLockTable: jb reads a (READY at 1) into b; jc reads a too into c.
// For each status of jb's INPUT row on a/1 it checks the job-local lock,
// that it blocks jb only, and never jc.
func (s *suite) testInputLockTable(t *testing.T) {
	rows := []struct {
		name   string
		setup  func(b *bundle)
		status backends.Status
		held   bool
	}{
		{"NoRow", func(b *bundle) {}, none, false},
		{"RUNNING", func(b *bundle) { b.claim("jb", "1") }, running, true},
		{"DONE", func(b *bundle) { b.run("jb", "1") }, done, true},
		{"ERROR", func(b *bundle) { b.fail(b.claim("jb", "1"), "boom") }, errored, false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			b := s.setup(t)
			b.pipeline()
			b.datasets("c")
			b.job("jc", "c", "a")
			b.publish("src", "1")
			b.run("ja", "1")
			row.setup(b)

			require.Equal(t, row.status, b.inputStatus("a", "1", "jb"))
			var want []lk
			if row.held {
				want = append(want, lk{"a", "1", lr, "jb", row.status})
			}
			locks, err := b.s.Locks(b.ctx, backends.LockFilter{Dataset: "a", Job: "jb"})
			require.NoError(t, err)
			requireLocks(t, locks, want...)
			var local []backends.Lock
			for _, l := range b.chunk("a", "1").Locks {
				if l.Kind == lr {
					local = append(local, l)
				}
			}
			requireLocks(t, local, want...)
			// The global lock of a READY chunk is untouched by consumers.
			require.Equal(t, ready, b.status("a", "1"))

			// Another job reading the same chunk is never blocked by jb's lock.
			b.requireBlockers("jc", "1")
			c, err := b.s.Claim(b.ctx, "jc", "1", executor)
			require.NoError(t, err)
			b.complete(c)

			bs, err := b.s.Blockers(b.ctx, "jb", "1")
			require.NoError(t, err)
			require.Equal(t, row.held, hasBlocker(bs, backends.BlockerLocalRead, "a", row.status), "jb blockers %+v", bs)
			if row.held {
				_, err := b.s.Claim(b.ctx, "jb", "1", executor)
				requireCode(t, err, backends.CodeLocked)
				require.True(t, hasBlocker(blockersOf(err), backends.BlockerLocalRead, "a", row.status))
				_, got := b.next("jb")
				require.Empty(t, got, "a job-local lock keeps jb off a/1")
				return
			}
			requireBlockers(t, "1", bs)
			c, got := b.next("jb")
			require.Equal(t, "1", got, "without a job-local lock jb may consume a/1")
			if row.status == errored {
				require.Equal(t, 2, c.Attempt, "a rerun after a failure is the second attempt")
			}
		})
	}
}

func blockersOf(err error) []backends.Blocker {
	var e *backends.Error
	if errors.As(err, &e) {
		return e.Blockers
	}
	return nil
}
