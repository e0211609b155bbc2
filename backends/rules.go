package backends

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// This file holds every rule of the status → lock tables and every status
// transition, as plain functions. The engine loads rows, asks these
// functions what to do, and writes what they return.

// LocksOf returns the locks a status row implies.
//
// OUTPUT rows hold global locks on their chunk:
//
//	RUNNING   GLOBAL_WRITE + GLOBAL_READ  a live claim is writing it
//	READY     GLOBAL_WRITE                produced; consumers may read
//	FAILED    GLOBAL_READ                 will be retried; not readable
//	RESUBMIT  GLOBAL_READ                 re-run requested; not readable
//	HOLD      GLOBAL_WRITE + GLOBAL_READ  frozen
//
// INPUT rows hold the job-local read lock of their job on the chunk:
//
//	RUNNING, DONE  LOCAL_READ  (DONE keeps it for good)
//	ERROR          none        the job may consume the chunk again
func LocksOf(r StatusRow) []LockKind {
	if r.Role == RoleInput {
		if HoldsLocalRead(r.Status) {
			return []LockKind{LockLocalRead}
		}
		return nil
	}
	var locks []LockKind
	if !FreeForProducers(r.Status) {
		locks = append(locks, LockGlobalWrite)
	}
	if !ReadableByConsumers(r.Status) {
		locks = append(locks, LockGlobalRead)
	}
	return locks
}

// FreeForProducers tells whether an OUTPUT status (StatusNone: no row) lets
// the producing job claim the chunk.
func FreeForProducers(s Status) bool {
	return s == StatusNone || s == StatusFailed || s == StatusResubmit
}

// ReadableByConsumers tells whether an OUTPUT status lets consumers read the chunk.
func ReadableByConsumers(s Status) bool { return s == StatusReady }

// HoldsLocalRead tells whether an INPUT status holds the job-local read lock.
func HoldsLocalRead(s Status) bool { return s == StatusRunning || s == StatusDone }

// DeriveLocks returns the locks implied by rows, in row order.
func DeriveLocks(rows []StatusRow) []Lock {
	var out []Lock
	for _, r := range rows {
		for _, k := range LocksOf(r) {
			l := Lock{Dataset: r.Dataset, DataID: r.DataID, Kind: k, Job: r.Job, Status: r.Status}
			if k == LockLocalRead {
				l.ReadFor = r.ReadForOf()
			}
			out = append(out, l)
		}
	}
	return out
}

// ClaimMode is the kind of claim being evaluated.
type ClaimMode int

const (
	// ModeClaim: claim or findNext. A RESUBMIT output needs only READY
	// inputs (rule 1); otherwise the output must be free (no row or FAILED),
	// every input READY, and the job must hold no job-local lock on any
	// input chunk (rule 2).
	ModeClaim ClaimMode = iota
	// ModeNext: findNext. As ModeClaim, except that a job with no inputs
	// only takes chunks that have a row already (FAILED or RESUBMIT): new
	// chunks of such a job are claimed by dataid.
	ModeNext
	// ModeForce: an operator's override. Ignores input readiness, job-local
	// locks, the output's status and pausing; a live claim on the output is
	// superseded (its token goes stale), so two claims are never live at once.
	ModeForce
)

// ClaimState is everything the rules need to decide whether Job may claim
// DataID: the job's OUTPUT row on its output chunk and, for each input
// chunk the claim reads (Reads: one per input at DataID for a job without
// mappings, the mapped sets otherwise), the input chunk's OUTPUT row and
// the job's INPUT row on it for DataID. A nil row means "no row".
type ClaimState struct {
	Job Job
	// RowJob is the id Job's OUTPUT rows are keyed under
	// (Catalog.RowJob); "" for Job.ID.
	RowJob   string
	DataID   string
	Output   *StatusRow
	Reads    []Read
	Upstream []*StatusRow
	Local    []*StatusRow
	// Now is the time of the claim: a FAILED output before its RetryAt
	// is in backoff, a scheduled window before its due time is not due.
	Now time.Time
	// Def is the partition definition of the output of a job without
	// inputs (nil: none); such a job claims a window once it is due.
	Def *partition.Def
	// Value is, when Def is DYNAMIC, the value DataID of its set, nil
	// when DataID is not in the set: a value is due from when it was
	// added + lag, and one not in the set is not due.
	Value *PartitionValue
	// Unexpected names an input read across dimensions that expects no
	// tuple for DataID (a DYNAMIC dimension read whole that has no value
	// expected at its window yet): the output is not due until one is.
	Unexpected string
}

// StatusOf is the status of an OUTPUT or INPUT row; StatusNone for no
// row (nil).
func StatusOf(r *StatusRow) Status {
	if r == nil {
		return StatusNone
	}
	return r.Status
}

// Blockers returns why the claim cannot be made now; empty means it can.
func (s ClaimState) Blockers(mode ClaimMode) []Blocker {
	if mode == ModeForce {
		return nil
	}
	var bs []Blocker
	if s.Job.Paused {
		bs = append(bs, Blocker{Dataset: s.Job.Output, DataID: s.DataID, Job: s.Job.ID, Kind: BlockerPaused, Status: StatusOf(s.Output)})
	}
	out := StatusOf(s.Output)
	bs = append(bs, s.timeBlockers(mode)...)
	if !FreeForProducers(out) {
		bs = append(bs, Blocker{Dataset: s.Job.Output, DataID: s.DataID, Job: s.Job.ID, Kind: BlockerOutputLocked, Status: out})
	}
	for i, r := range s.Reads {
		up := s.Upstream[i]
		if st := StatusOf(up); !ReadableByConsumers(st) {
			job := ""
			if up != nil {
				job = up.Job
			}
			bs = append(bs, Blocker{Dataset: r.Dataset, DataID: r.DataID, Job: job, Kind: BlockerInputNotReady, Status: st})
		}
		// A resubmitted output may re-read inputs it consumed before.
		if out != StatusResubmit {
			if st := StatusOf(s.Local[i]); HoldsLocalRead(st) {
				bs = append(bs, Blocker{Dataset: r.Dataset, DataID: r.DataID, Job: s.Job.ID, Kind: BlockerLocalRead, Status: st})
			}
		}
	}
	return bs
}

// timeBlockers are the blockers of a job without inputs (claimed by
// dataid only by findNext, unless its output's definition schedules it;
// not before the window is due) and of a FAILED output in backoff.
func (s ClaimState) timeBlockers(mode ClaimMode) []Blocker {
	var bs []Blocker
	out := StatusOf(s.Output)
	blocker := func(kind BlockerKind, until time.Time) Blocker {
		return Blocker{Dataset: s.Job.Output, DataID: s.DataID, Job: s.Job.ID, Kind: kind, Status: out, Until: until}
	}
	scheduled := s.Def != nil && (s.Def.Windowed() || s.Def.Bounded() || s.Def.Kind == partition.Dynamic)
	if mode == ModeNext && len(s.Job.Inputs) == 0 && out == StatusNone && !scheduled {
		bs = append(bs, blocker(BlockerNoInputs, time.Time{}))
	}
	if len(s.Job.Inputs) == 0 && s.Def != nil && s.Def.Kind == partition.Dynamic {
		switch {
		case s.Value == nil:
			bs = append(bs, blocker(BlockerNotDue, time.Time{})) // not in the set (yet)
		case s.Now.Before(s.Value.AddedAt.Add(s.Def.Lag)):
			bs = append(bs, blocker(BlockerNotDue, s.Value.AddedAt.Add(s.Def.Lag)))
		}
	} else if len(s.Job.Inputs) == 0 && s.Def != nil {
		if due, err := s.Def.Due(s.DataID); err == nil && s.Now.Before(due) {
			bs = append(bs, blocker(BlockerNotDue, due))
		}
	}
	if s.Unexpected != "" {
		// Nothing to read in its window yet: not due, with no time it
		// lifts at (a value's add does).
		bs = append(bs, blocker(BlockerNotDue, time.Time{}))
	}
	if out == StatusFailed && s.Now.Before(s.Output.RetryAt) {
		bs = append(bs, blocker(BlockerBackoff, s.Output.RetryAt))
	}
	return bs
}

// ClaimWrite is what a claim writes: the new rows and the claim itself.
type ClaimWrite struct {
	Claim  Claim
	Output StatusRow
	Inputs []StatusRow
	// Superseded is true when a force replaced a live claim.
	Superseded bool
}

// Apply computes the rows a claim writes. The caller has checked Blockers.
func (s ClaimState) Apply(executor, token string, fence int64, now time.Time) ClaimWrite {
	lease := now.Add(s.Job.Lease())
	prevOf := func(r *StatusRow) Status {
		if r == nil {
			return StatusNone
		}
		if r.Status == StatusRunning { // superseding: keep what was there before the first claim
			return r.PrevStatus
		}
		return r.Status
	}
	attempt := 1
	if s.Output != nil {
		attempt = s.Output.Attempt + 1
	}
	rowJob := s.RowJob
	if rowJob == "" {
		rowJob = s.Job.ID
	}
	w := ClaimWrite{
		Superseded: StatusOf(s.Output) == StatusRunning,
		Output: StatusRow{
			RowKey:         RowKey{Dataset: s.Job.Output, DataID: s.DataID, Job: rowJob, Role: RoleOutput},
			Status:         StatusRunning,
			Attempt:        attempt,
			Executor:       executor,
			Token:          token,
			Fence:          fence,
			LeaseExpiresAt: lease,
			UpdatedAt:      now,
			PrevStatus:     prevOf(s.Output),
		},
	}
	if s.Job.Mapped() {
		w.Output.Reads = s.Reads
	}
	for i, r := range s.Reads {
		w.Inputs = append(w.Inputs, StatusRow{
			RowKey:     ReadKey(s.Job.ID, r, s.DataID),
			Status:     StatusRunning,
			Attempt:    attempt,
			Executor:   executor,
			Token:      token,
			Fence:      fence,
			UpdatedAt:  now,
			PrevStatus: prevOf(s.Local[i]),
		})
	}
	w.Claim = ClaimOf(s.Job, w.Output)
	return w
}

// ClaimOf builds the claim an OUTPUT row in RUNNING stands for.
func ClaimOf(job Job, out StatusRow) Claim {
	reads := out.Reads
	if reads == nil && !job.Mapped() {
		reads = IdentityReads(job, out.DataID) // kept without them
	}
	return Claim{
		Token:          out.Token,
		Fence:          out.Fence,
		Job:            job.ID,
		Output:         out.Dataset,
		Inputs:         append([]string(nil), job.Inputs...),
		Reads:          append([]Read(nil), reads...),
		DataID:         out.DataID,
		Attempt:        out.Attempt,
		Executor:       out.Executor,
		LeaseExpiresAt: out.LeaseExpiresAt,
	}
}

// CheckLive returns nil when row is the live claim that token and fence
// name at time now, and STALE_CLAIM otherwise: superseded, completed,
// failed, released, or past its lease (even before the reaper ran).
func CheckLive(row *StatusRow, token string, fence int64, now time.Time) error {
	switch {
	case row == nil || row.Status != StatusRunning || row.Token != token || row.Fence != fence:
		return StaleClaim("claim is no longer live (completed, failed, released or superseded); stop without writing")
	case !now.Before(row.LeaseExpiresAt):
		return StaleClaim("claim lease expired at %s; stop without writing", row.LeaseExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// EndClaim computes the rows that end a claim: for each given row, the new
// row, or nil when the row is to be deleted (release of a claim on a chunk
// that had no row).
func EndClaim(how Ending, job Job, out StatusRow, inputs []StatusRow, reason string, now time.Time) (StatusRow, []*StatusRow, bool) {
	end := func(r StatusRow, status Status, attemptDelta int) *StatusRow {
		if status == StatusNone {
			return nil
		}
		r.Status = status
		r.Attempt += attemptDelta
		r.LeaseExpiresAt = time.Time{}
		r.UpdatedAt = now
		r.Reason = reason
		r.PrevStatus = StatusNone
		r.Ended = ""
		r.RetryAt = time.Time{}
		r.Reads = nil
		return &r
	}
	var outStatus, inStatus Status
	delta := 0
	switch how {
	case EndComplete:
		outStatus, inStatus = StatusReady, StatusDone
	case EndFail, EndExpire:
		outStatus, inStatus = StatusFailed, StatusError
		if out.Attempt >= job.MaxAttempts {
			outStatus = StatusHold
		}
	case EndRelease:
		delta = -1
	}
	var newInputs []*StatusRow
	for _, in := range inputs {
		st := inStatus
		if how == EndRelease {
			st = in.PrevStatus
		}
		newInputs = append(newInputs, end(in, st, delta))
	}
	if how == EndRelease {
		outStatus = out.PrevStatus
	}
	newOut := end(out, outStatus, delta)
	if newOut == nil {
		return StatusRow{}, newInputs, false
	}
	newOut.Ended = how
	if newOut.Status == StatusFailed && how != EndRelease {
		newOut.RetryAt = RetryAt(job, out.Attempt, now)
	}
	return *newOut, newInputs, true
}

// EndedBy tells whether the operation how, repeated with token and fence,
// finds the claim ended by that very operation, and must answer as the
// first call did (SPEC §3 "Retries are safe"): row is the claim's OUTPUT
// row now. The row records how its last claim ended until the chunk is
// claimed, resubmitted or held again. A release that left no row behind
// (the chunk had none before the claim) cannot be told from a token that
// was never issued, so its repeat is STALE_CLAIM, as a forged token's is:
// either way no claim of that token holds the chunk.
func EndedBy(how Ending, row *StatusRow, token string, fence int64) bool {
	if row == nil {
		return false
	}
	return row.Status != StatusRunning && row.Ended == how && row.Token == token && row.Fence == fence
}

// ResubmitFrom tells whether an OUTPUT status may be resubmitted.
func ResubmitFrom(s Status) bool {
	return s == StatusReady || s == StatusFailed || s == StatusHold || s == StatusResubmit
}

// CascadeStep is what invalidating a chunk does to one of its consumers
// (resubmit with cascade, force).
type CascadeStep int

const (
	// CascadeSkip: the consumer neither computed from the chunk nor failed
	// on it.
	CascadeSkip CascadeStep = iota
	// CascadeBlocked: the consumer reads the chunk, or writes its output at
	// that dataid, right now: the whole invalidation is refused.
	CascadeBlocked
	// CascadeInvalidate: the consumer computed from the chunk (INPUT DONE):
	// the INPUT row becomes ERROR, the OUTPUT row RESUBMIT, and what was
	// computed from that output is invalidated in turn.
	CascadeInvalidate
	// CascadeRetry: the consumer failed on the chunk (INPUT ERROR, OUTPUT
	// FAILED, or HOLD because its attempts ran out): the OUTPUT row becomes
	// RESUBMIT with its attempts counted afresh, so fixing the chunk heals
	// the pipeline, and the walk goes on below it. A HOLD an operator set
	// stays: the operator thaws it.
	CascadeRetry
)

// CascadeStepOf plans the step for a consumer from its INPUT row on the
// invalidated chunk and its OUTPUT row at the same dataid (nil: no row).
func CascadeStepOf(in, out *StatusRow) CascadeStep {
	switch StatusOf(in) {
	case StatusRunning:
		return CascadeBlocked
	case StatusDone:
		if StatusOf(out) == StatusRunning {
			return CascadeBlocked
		}
		return CascadeInvalidate
	case StatusError:
		switch StatusOf(out) {
		case StatusFailed:
			return CascadeRetry
		case StatusHold:
			if out.Ended == EndFail || out.Ended == EndExpire { // attempts exhausted
				return CascadeRetry
			}
		}
	}
	return CascadeSkip
}

// ResourceLockRefusers returns, sorted by id, the locks among held that
// refuse want (SPEC §3 lockResource): any number of READ locks on a
// resource unless a WRITE lock exists, a WRITE lock only when no lock
// exists. Locks on other resources and locks expired at now refuse
// nothing.
func ResourceLockRefusers(held []ResourceLock, want ResourceLock, now time.Time) []ResourceLock {
	var out []ResourceLock
	for _, h := range held {
		if h.Resource == want.Resource && now.Before(h.ExpiresAt) && (want.Mode == LockWrite || h.Mode == LockWrite) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b ResourceLock) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// RetryAt is when a chunk of job whose attempt failed at failedAt may be
// claimed again: failedAt + min(RetryDelaySeconds × 2^(attempt−1),
// RetryMaxDelaySeconds). Zero when the job has no retry delay.
func RetryAt(job Job, attempt int, failedAt time.Time) time.Time {
	if job.RetryDelaySeconds <= 0 {
		return time.Time{}
	}
	limit := int64(job.RetryMaxDelaySeconds)
	if limit <= 0 {
		limit = DefaultRetryMaxDelaySeconds
	}
	limit = min(limit, int64(math.MaxInt64/time.Second)) // a time.Duration holds it
	d := int64(job.RetryDelaySeconds)
	for i := 1; i < attempt && d < limit && d <= math.MaxInt64/2; i++ {
		d *= 2
	}
	return failedAt.Add(time.Duration(min(d, limit)) * time.Second)
}

// CheckCredentialKey refuses a credential of job encrypted to another kind
// of key than the job's (its key was replaced since, say age by Vault):
// its ciphertext is never handed to the job's keyring. INVALID_ARGUMENT,
// saying to set the credential again.
func CheckCredentialKey(job Job, c Credential) error {
	if c.KeyKind == job.Key.Kind {
		return nil
	}
	return InvalidArgument("the credential of job %q for dataset %q was encrypted to a %s key, but the job's key is now a %s key; set the credential again",
		job.ID, c.Dataset, KeyKindName(c.KeyKind), KeyKindName(job.Key.Kind))
}

// KeyKindName names a kind of job key for messages: "keyring-less" for a
// key of no kind.
func KeyKindName(kind string) string {
	if kind == "" {
		return "keyring-less"
	}
	return kind
}

// IdentityReads is what a claim of a job without mappings reads at dataid:
// each input's chunk of the same dataid.
func IdentityReads(job Job, dataid string) []Read {
	reads := make([]Read, len(job.Inputs))
	for i, in := range job.Inputs {
		reads[i] = Read{Dataset: in, DataID: dataid}
	}
	return reads
}

// SortedReads lists the rows of byKey (nil: none) in shortlex ReadFor
// order.
func SortedReads(byKey map[RowKey]*StatusRow) []StatusRow {
	out := make([]StatusRow, 0, len(byKey))
	for _, r := range byKey {
		if r != nil {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b StatusRow) int { return CompareDataID(a.ReadFor, b.ReadFor) })
	return out
}
