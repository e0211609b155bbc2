package backends

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestLocksOf checks every row of both tables of SPEC §2.
func TestLocksOf(t *testing.T) {
	cases := []struct {
		role   Role
		status Status
		want   []LockKind
	}{
		{RoleOutput, StatusRunning, []LockKind{LockGlobalWrite, LockGlobalRead}},
		{RoleOutput, StatusReady, []LockKind{LockGlobalWrite}},
		{RoleOutput, StatusFailed, []LockKind{LockGlobalRead}},
		{RoleOutput, StatusResubmit, []LockKind{LockGlobalRead}},
		{RoleOutput, StatusHold, []LockKind{LockGlobalWrite, LockGlobalRead}},
		{RoleInput, StatusRunning, []LockKind{LockLocalRead}},
		{RoleInput, StatusDone, []LockKind{LockLocalRead}},
		{RoleInput, StatusError, nil},
	}
	for _, c := range cases {
		got := LocksOf(StatusRow{RowKey: RowKey{Dataset: "d", DataID: "1", Job: "j", Role: c.role}, Status: c.status})
		require.ElementsMatch(t, c.want, got, "%s %s", c.role, c.status)
	}
	// "No row" rows of the tables: free for producers, blocked for consumers.
	require.True(t, FreeForProducers(StatusNone))
	require.False(t, ReadableByConsumers(StatusNone))
	require.False(t, HoldsLocalRead(StatusNone))

	free := map[Status]bool{StatusRunning: false, StatusReady: false, StatusFailed: true, StatusResubmit: true, StatusHold: false}
	readable := map[Status]bool{StatusRunning: false, StatusReady: true, StatusFailed: false, StatusResubmit: false, StatusHold: false}
	for st := range free {
		require.Equal(t, free[st], FreeForProducers(st), "producers on %s", st)
		require.Equal(t, readable[st], ReadableByConsumers(st), "consumers on %s", st)
	}
}

func TestDeriveLocks(t *testing.T) {
	rows := []StatusRow{
		{RowKey: RowKey{Dataset: "a", DataID: "1", Job: "ja", Role: RoleOutput}, Status: StatusRunning},
		{RowKey: RowKey{Dataset: "a", DataID: "1", Job: "jb", Role: RoleInput}, Status: StatusError},
		{RowKey: RowKey{Dataset: "a", DataID: "1", Job: "jc", Role: RoleInput}, Status: StatusDone},
		{RowKey: RowKey{Dataset: "a", DataID: "1", Job: "jc", Role: RoleInput, ReadFor: "3"}, Status: StatusRunning},
	}
	require.Equal(t, []Lock{
		{Dataset: "a", DataID: "1", Kind: LockGlobalWrite, Job: "ja", Status: StatusRunning},
		{Dataset: "a", DataID: "1", Kind: LockGlobalRead, Job: "ja", Status: StatusRunning},
		{Dataset: "a", DataID: "1", Kind: LockLocalRead, Job: "jc", Status: StatusDone, ReadFor: "1"},
		{Dataset: "a", DataID: "1", Kind: LockLocalRead, Job: "jc", Status: StatusRunning, ReadFor: "3"},
	}, DeriveLocks(rows))
	require.Empty(t, DeriveLocks(nil))
}

func row(dataset, job string, role Role, st Status) *StatusRow {
	return &StatusRow{RowKey: RowKey{Dataset: dataset, DataID: "7", Job: job, Role: role}, Status: st, Attempt: 1}
}

func kinds(bs []Blocker) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, string(b.Kind)+" "+b.Dataset+" "+string(b.Status))
	}
	return out
}

func TestBlockers(t *testing.T) {
	job := Job{ID: "jm", Inputs: []string{"x", "y"}, Output: "m", MaxAttempts: 3, LeaseSeconds: 60}
	state := func(out Status, x, y Status, lx, ly Status) ClaimState {
		s := ClaimState{Job: job, DataID: "7", Reads: IdentityReads(job, "7"), Upstream: make([]*StatusRow, 2), Local: make([]*StatusRow, 2)}
		if out != StatusNone {
			s.Output = row("m", "jm", RoleOutput, out)
		}
		for i, st := range []Status{x, y} {
			if st != StatusNone {
				s.Upstream[i] = row([]string{"x", "y"}[i], "", RoleOutput, st)
			}
		}
		for i, st := range []Status{lx, ly} {
			if st != StatusNone {
				s.Local[i] = row([]string{"x", "y"}[i], "jm", RoleInput, st)
			}
		}
		return s
	}
	R, N := StatusReady, StatusNone
	cases := []struct {
		name string
		s    ClaimState
		want []string
	}{
		{"new chunk, inputs ready", state(N, R, R, N, N), nil},
		{"failed, inputs released", state(StatusFailed, R, R, StatusError, StatusError), nil},
		{"input missing", state(N, R, N, N, N), []string{"INPUT_NOT_READY y "}},
		{"input running", state(N, StatusRunning, R, N, N), []string{"INPUT_NOT_READY x RUNNING"}},
		{"input resubmitted", state(N, StatusResubmit, StatusHold, N, N), []string{"INPUT_NOT_READY x RESUBMIT", "INPUT_NOT_READY y HOLD"}},
		{"output ready, inputs done", state(R, R, R, StatusDone, StatusDone), []string{"OUTPUT_LOCKED m READY", "LOCAL_READ x DONE", "LOCAL_READ y DONE"}},
		{"output running", state(StatusRunning, R, R, StatusRunning, StatusRunning), []string{"OUTPUT_LOCKED m RUNNING", "LOCAL_READ x RUNNING", "LOCAL_READ y RUNNING"}},
		{"output hold", state(StatusHold, R, R, StatusError, StatusError), []string{"OUTPUT_LOCKED m HOLD"}},
		{"resubmit ignores local locks", state(StatusResubmit, R, R, StatusDone, StatusError), nil},
		{"resubmit still needs ready inputs", state(StatusResubmit, R, StatusFailed, StatusDone, StatusDone), []string{"INPUT_NOT_READY y FAILED"}},
	}
	for _, c := range cases {
		if c.want == nil {
			c.want = []string{}
		}
		require.ElementsMatch(t, c.want, kinds(c.s.Blockers(ModeClaim)), c.name)
		require.ElementsMatch(t, c.want, kinds(c.s.Blockers(ModeNext)), c.name+" (findNext)")
		require.Empty(t, c.s.Blockers(ModeForce), c.name+" (force)")
	}

	paused := state(N, R, R, N, N)
	paused.Job.Paused = true
	require.Equal(t, []string{"PAUSED m "}, kinds(paused.Blockers(ModeClaim)))
	require.Empty(t, paused.Blockers(ModeForce), "force ignores pausing")

	// A job without inputs: claim takes a new dataid, findNext does not.
	gen := ClaimState{Job: Job{ID: "gen", Output: "g", Inputs: []string{}}, DataID: "7"}
	require.Empty(t, gen.Blockers(ModeClaim))
	require.Equal(t, []string{"NO_INPUTS g "}, kinds(gen.Blockers(ModeNext)))
	gen.Output = row("g", "gen", RoleOutput, StatusFailed)
	require.Empty(t, gen.Blockers(ModeNext))
	gen.Output.Status = StatusResubmit
	require.Empty(t, gen.Blockers(ModeNext))
}

func TestApply(t *testing.T) {
	job := Job{ID: "jb", Inputs: []string{"a"}, Output: "b", MaxAttempts: 3, LeaseSeconds: 90}
	s := ClaimState{Job: job, DataID: "7", Reads: IdentityReads(job, "7"), Upstream: []*StatusRow{row("a", "ja", RoleOutput, StatusReady)}, Local: []*StatusRow{nil}}
	w := s.Apply("exec", "tok1", 5, t0)
	require.False(t, w.Superseded)
	require.Equal(t, RowKey{Dataset: "b", DataID: "7", Job: "jb", Role: RoleOutput}, w.Output.RowKey)
	require.Equal(t, StatusRunning, w.Output.Status)
	require.Equal(t, 1, w.Output.Attempt)
	require.Equal(t, StatusNone, w.Output.PrevStatus)
	require.Equal(t, t0.Add(90*time.Second), w.Output.LeaseExpiresAt)
	require.Equal(t, int64(5), w.Output.Fence)
	require.Len(t, w.Inputs, 1)
	require.Equal(t, RowKey{Dataset: "a", DataID: "7", Job: "jb", Role: RoleInput}, w.Inputs[0].RowKey)
	require.Equal(t, StatusRunning, w.Inputs[0].Status)
	require.Equal(t, Claim{Token: "tok1", Fence: 5, Job: "jb", Output: "b", Inputs: []string{"a"}, Reads: []Read{{Dataset: "a", DataID: "7"}}, DataID: "7",
		Attempt: 1, Executor: "exec", LeaseExpiresAt: t0.Add(90 * time.Second)}, w.Claim)

	// From FAILED with an ERROR input row.
	s.Output = &StatusRow{RowKey: w.Output.RowKey, Status: StatusFailed, Attempt: 2}
	s.Local = []*StatusRow{{RowKey: w.Inputs[0].RowKey, Status: StatusError}}
	w = s.Apply("exec", "tok2", 6, t0)
	require.Equal(t, 3, w.Output.Attempt)
	require.Equal(t, StatusFailed, w.Output.PrevStatus)
	require.Equal(t, StatusError, w.Inputs[0].PrevStatus)

	// Superseding keeps what was there before the first claim.
	s.Output, s.Local = &w.Output, []*StatusRow{&w.Inputs[0]}
	w2 := s.Apply("operator", "tok3", 7, t0.Add(time.Minute))
	require.True(t, w2.Superseded)
	require.Equal(t, 4, w2.Output.Attempt)
	require.Equal(t, StatusFailed, w2.Output.PrevStatus)
	require.Equal(t, StatusError, w2.Inputs[0].PrevStatus)
}

func TestCheckLive(t *testing.T) {
	live := &StatusRow{Status: StatusRunning, Token: "tok", Fence: 3, LeaseExpiresAt: t0.Add(time.Minute)}
	require.NoError(t, CheckLive(live, "tok", 3, t0))
	require.NoError(t, CheckLive(live, "tok", 3, t0.Add(time.Minute-time.Microsecond)))
	stale := []struct {
		name  string
		row   *StatusRow
		token string
		fence int64
		now   time.Time
	}{
		{"no row", nil, "tok", 3, t0},
		{"other token", live, "tok2", 3, t0},
		{"other fence", live, "tok", 4, t0},
		{"lease passed exactly", live, "tok", 3, t0.Add(time.Minute)},
		{"lease passed", live, "tok", 3, t0.Add(time.Hour)},
		{"completed", &StatusRow{Status: StatusReady, Token: "tok", Fence: 3}, "tok", 3, t0},
		{"failed", &StatusRow{Status: StatusFailed, Token: "tok", Fence: 3}, "tok", 3, t0},
	}
	for _, c := range stale {
		err := CheckLive(c.row, c.token, c.fence, c.now)
		require.ErrorIs(t, err, ErrStaleClaim, c.name)
		require.Equal(t, CodeStaleClaim, CodeOf(err))
	}
}

func TestEndClaim(t *testing.T) {
	job := Job{ID: "jb", Inputs: []string{"a"}, Output: "b", MaxAttempts: 2, LeaseSeconds: 60}
	out := StatusRow{RowKey: RowKey{Dataset: "b", DataID: "7", Job: "jb", Role: RoleOutput}, Status: StatusRunning,
		Attempt: 1, Token: "tok", Fence: 1, LeaseExpiresAt: t0.Add(time.Minute), PrevStatus: StatusNone}
	in := StatusRow{RowKey: RowKey{Dataset: "a", DataID: "7", Job: "jb", Role: RoleInput}, Status: StatusRunning,
		Attempt: 1, PrevStatus: StatusNone}
	now := t0.Add(30 * time.Second)

	newOut, newIns, keep := EndClaim(EndComplete, job, out, []StatusRow{in}, "", now)
	require.True(t, keep)
	require.Equal(t, StatusReady, newOut.Status)
	require.Equal(t, 1, newOut.Attempt)
	require.True(t, newOut.LeaseExpiresAt.IsZero())
	require.Equal(t, now, newOut.UpdatedAt)
	require.Equal(t, StatusDone, newIns[0].Status)

	newOut, newIns, keep = EndClaim(EndFail, job, out, []StatusRow{in}, "boom", now)
	require.True(t, keep)
	require.Equal(t, StatusFailed, newOut.Status, "attempt 1 of 2")
	require.Equal(t, "boom", newOut.Reason)
	require.Equal(t, StatusError, newIns[0].Status)
	out2 := out
	out2.Attempt = 2
	newOut, _, _ = EndClaim(EndFail, job, out2, []StatusRow{in}, "boom", now)
	require.Equal(t, StatusHold, newOut.Status, "attempt >= maxAttempts")
	out2.Attempt = 5 // forced past the limit
	newOut, _, _ = EndClaim(EndFail, job, out2, []StatusRow{in}, "boom", now)
	require.Equal(t, StatusHold, newOut.Status)

	// Release of a first claim: both rows go away.
	_, newIns, keep = EndClaim(EndRelease, job, out, []StatusRow{in}, "released", now)
	require.False(t, keep)
	require.Equal(t, []*StatusRow{nil}, newIns)
	// Release of a re-run: back to FAILED / ERROR, attempt not counted.
	out3, in3 := out, in
	out3.Attempt, out3.PrevStatus, in3.PrevStatus = 2, StatusFailed, StatusError
	newOut, newIns, keep = EndClaim(EndRelease, job, out3, []StatusRow{in3}, "released", now)
	require.True(t, keep)
	require.Equal(t, StatusFailed, newOut.Status)
	require.Equal(t, 1, newOut.Attempt)
	require.Equal(t, StatusNone, newOut.PrevStatus)
	require.Equal(t, StatusError, newIns[0].Status)
	// Release of a RESUBMIT claim keeps the job's DONE lock.
	out3.Attempt, out3.PrevStatus, in3.PrevStatus = 1, StatusResubmit, StatusDone
	newOut, newIns, _ = EndClaim(EndRelease, job, out3, []StatusRow{in3}, "released", now)
	require.Equal(t, StatusResubmit, newOut.Status)
	require.Equal(t, 0, newOut.Attempt)
	require.Equal(t, StatusDone, newIns[0].Status)
}

func TestResubmitFrom(t *testing.T) {
	for st, ok := range map[Status]bool{StatusReady: true, StatusFailed: true, StatusHold: true, StatusResubmit: true,
		StatusRunning: false, StatusNone: false} {
		require.Equal(t, ok, ResubmitFrom(st), "%q", st)
	}
}

func TestResourceLockRefusers(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lock := func(id, resource string, mode LockMode, ttl time.Duration) ResourceLock {
		return ResourceLock{ID: id, Resource: resource, Mode: mode, ExpiresAt: now.Add(ttl)}
	}
	held := []ResourceLock{
		lock("rl3", "db", LockRead, time.Hour),
		lock("rl1", "db", LockRead, time.Hour),
		lock("rl2", "db", LockWrite, 0), // expired
		lock("rl4", "other", LockWrite, time.Hour),
	}
	ids := func(ls []ResourceLock) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.ID)
		}
		return out
	}
	require.Empty(t, ResourceLockRefusers(held, lock("", "db", LockRead, time.Hour), now), "READ beside READ")
	require.Equal(t, []string{"rl1", "rl3"}, ids(ResourceLockRefusers(held, lock("", "db", LockWrite, time.Hour), now)),
		"WRITE refused by every unexpired lock on the resource, by id")
	require.Equal(t, []string{"rl4"}, ids(ResourceLockRefusers(held, lock("", "other", LockRead, time.Hour), now)))
	require.Empty(t, ResourceLockRefusers(held, lock("", "free", LockWrite, time.Hour), now))
}

func TestCheckCredentialKey(t *testing.T) {
	job := Job{ID: "ja", Key: JobKey{Kind: "age", Public: "age1x"}}
	require.NoError(t, CheckCredentialKey(job, Credential{Job: "ja", Dataset: "a", KeyKind: "age"}))
	for _, kind := range []string{"vault", ""} {
		err := CheckCredentialKey(job, Credential{Job: "ja", Dataset: "a", KeyKind: kind})
		require.Equal(t, CodeInvalidArgument, CodeOf(err), "a credential encrypted to a %q key", kind)
		require.Contains(t, err.Error(), `the credential of job "ja" for dataset "a" was encrypted to a `+KeyKindName(kind)+` key, but the job's key is now a age key; set the credential again`)
	}
	require.Equal(t, "keyring-less", KeyKindName(""))
}
