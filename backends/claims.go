package backends

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// Claims: findNext, claim and force make them; heartbeat, complete, fail
// and release act on a live one; the reaper ends those past their lease.

// claimKeys are the rows the rules need about job at dataid: its OUTPUT
// row, then the OUTPUT row of each input chunk, then its INPUT rows.
func claimKeys(cat *Catalog, job Job, dataid string) []RowKey {
	keys := []RowKey{outputKey(job, dataid)}
	for _, in := range job.Inputs {
		keys = append(keys, chunkOutputKey(cat, in, dataid))
	}
	for _, in := range job.Inputs {
		keys = append(keys, RowKey{Dataset: in, DataID: dataid, Job: job.ID, Role: RoleInput})
	}
	return keys
}

// claimStateOf builds the claim state from the rows of claimKeys.
func claimStateOf(job Job, dataid string, rows []*StatusRow) ClaimState {
	n := len(job.Inputs)
	return ClaimState{Job: job, DataID: dataid, Output: rows[0], Upstream: rows[1 : 1+n], Local: rows[1+n:]}
}

// loadClaimState reads what the rules need about job at dataid.
func loadClaimState(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid string) (ClaimState, error) {
	rows, err := tx.GetRows(ctx, claimKeys(cat, job, dataid))
	if err != nil {
		return ClaimState{}, err
	}
	return claimStateOf(job, dataid, rows), nil
}

// lockClaimState locks the chunks a claim of job at dataid touches and
// reads what the rules need about them.
func lockClaimState(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid string) (ClaimState, error) {
	if err := tx.LockChunks(ctx, dataid, []string{job.Output}, job.Inputs); err != nil {
		return ClaimState{}, err
	}
	return loadClaimState(ctx, tx, cat, job, dataid)
}

// claimIn evaluates and, when allowed, makes a claim inside tx. A force
// also invalidates what downstream jobs computed from the chunk it
// rewrites, as resubmit with cascade does, and is refused while any of
// them reads or writes at that dataid.
func (e *engine) claimIn(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid, executor string, mode ClaimMode) (*Claim, error) {
	if mode != ModeForce {
		st, err := lockClaimState(ctx, tx, cat, job, dataid)
		if err != nil {
			return nil, err
		}
		return e.claimState(ctx, tx, cat, st, executor, mode)
	}
	if err := tx.LockChunks(ctx, dataid, cat.Downstream(job.Output), job.Inputs); err != nil {
		return nil, err
	}
	st, err := loadClaimState(ctx, tx, cat, job, dataid)
	if err != nil {
		return nil, err
	}
	reason := "upstream " + job.Output + "/" + dataid + " forced by " + ActorFrom(ctx)
	if _, err := e.cascade(ctx, tx, cat, job.Output, dataid, reason); err != nil {
		return nil, err
	}
	return e.claimState(ctx, tx, cat, st, executor, mode)
}

// claimState makes the claim st describes, if the rules allow it, inside
// the transaction that locked and loaded st.
func (e *engine) claimState(ctx context.Context, tx Tx, cat *Catalog, st ClaimState, executor string, mode ClaimMode) (*Claim, error) {
	job, dataid := st.Job, st.DataID
	if bs := st.Blockers(mode); len(bs) > 0 {
		return nil, Locked(bs, "job %q cannot claim dataid %q now: %s", job.ID, dataid, describeBlockers(bs))
	}
	fence, err := tx.NextFence(ctx, job.Output, dataid)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	w := st.Apply(executor, NewToken(job.ID, job.Output, dataid, fence), fence, now)
	if w.Superseded {
		ev := event(ctx, st.Output, *st.Output)
		ev.Time, ev.To, ev.Reason = now, StatusRunning, "superseded by force"
		if err := tx.AppendEvent(ctx, ev); err != nil {
			return nil, err
		}
	}
	if err := put(ctx, tx, st.Output, w.Output); err != nil {
		return nil, err
	}
	for i, in := range w.Inputs {
		if err := put(ctx, tx, st.Local[i], in); err != nil {
			return nil, err
		}
	}
	withAccess(cat, job, &w.Claim)
	return &w.Claim, nil
}

// withAccess adds to a claim what its answer carries besides its rows:
// the definitions of its output and input datasets and its job's
// environment, from the catalog version of the claim's own transaction.
func withAccess(cat *Catalog, job Job, c *Claim) {
	c.Datasets = make([]Dataset, 0, 1+len(job.Inputs))
	c.Datasets = append(c.Datasets, cat.Datasets.Get(job.Output))
	for _, in := range job.Inputs {
		c.Datasets = append(c.Datasets, cat.Datasets.Get(in))
	}
	c.Env = job.Env
}

func describeBlockers(bs []Blocker) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		st := string(b.Status)
		if st == "" {
			st = "no row"
		}
		parts = append(parts, string(b.Kind)+" "+b.Dataset+"/"+b.DataID+" ("+st+")")
	}
	return strings.Join(parts, ", ")
}

func validExecutor(executor string) error {
	if executor == "" || len(executor) > 256 {
		return InvalidArgument("executor must be 1-256 characters")
	}
	if !utf8.ValidString(executor) || strings.ContainsRune(executor, 0) {
		return InvalidArgument("executor must be valid UTF-8 text without NUL")
	}
	return nil
}

func (e *engine) FindNext(ctx context.Context, jobID, executor string) (*Claim, error) {
	if err := validExecutor(executor); err != nil {
		return nil, err
	}
	if e.maxBatch >= 2 {
		return e.findNextBatched(ctx, jobID, executor)
	}
	var claim *Claim
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		var err error
		claim, err = e.findNext(ctx, cat, jobID, executor)
		return err
	})
	return claim, err
}

func (e *engine) findNext(ctx context.Context, cat *opCatalog, jobID, executor string) (*Claim, error) {
	job, err := cat.Job(jobID)
	if err != nil {
		return nil, err
	}
	if job.Paused {
		return nil, nil
	}
	// One transaction per candidate: a candidate that turns out not to be
	// claimable is dropped and committed, so no transaction holds locks on
	// more than one dataid.
	for {
		var claim *Claim
		var done bool
		err := e.update(ctx, cat, func(tx Tx) error {
			claim, done = nil, false
			c, ok, err := tx.NextCandidate(ctx, job.ID)
			if err != nil {
				return err
			}
			if !ok {
				done = true
				return nil
			}
			st, err := lockClaimState(ctx, tx, cat.Catalog, job, c.DataID)
			if err != nil {
				return err
			}
			// A candidate's Resubmit flag was true when it was added, but the
			// output may have moved on since (claimed from RESUBMIT, then
			// failed; or a duplicate hint). Put it back in its true place in
			// the queue, so that RESUBMIT chunks come first and the others
			// strictly by dataid.
			out := statusOf(st.Output)
			if isResubmit := out == StatusResubmit; c.Resubmit != isResubmit && FreeForProducers(out) {
				if err := tx.DropCandidate(ctx, c); err != nil {
					return err
				}
				return tx.AddCandidate(ctx, Candidate{Job: job.ID, DataID: c.DataID, Resubmit: isResubmit})
			}
			claim, err = e.claimState(ctx, tx, cat.Catalog, st, executor, ModeNext)
			if err != nil && !errors.Is(err, ErrLocked) {
				return err
			}
			done = err == nil
			return tx.DropCandidate(ctx, c)
		})
		if err != nil {
			return nil, err
		}
		if done {
			return claim, nil
		}
	}
}

func (e *engine) claimOne(ctx context.Context, jobID, dataid, executor string, mode ClaimMode) (*Claim, error) {
	if err := ValidateDataID(dataid); err != nil {
		return nil, err
	}
	if err := validExecutor(executor); err != nil {
		return nil, err
	}
	var claim *Claim
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		job, err := cat.Job(jobID)
		if err != nil {
			return err
		}
		return e.update(ctx, cat, func(tx Tx) error {
			var err error
			claim, err = e.claimIn(ctx, tx, cat.Catalog, job, dataid, executor, mode)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return claim, nil
}

func (e *engine) Claim(ctx context.Context, job, dataid, executor string) (*Claim, error) {
	return e.claimOne(ctx, job, dataid, executor, ModeClaim)
}

func (e *engine) Force(ctx context.Context, job, dataid, executor string) (*Claim, error) {
	return e.claimOne(ctx, job, dataid, executor, ModeForce)
}

func (e *engine) Heartbeat(ctx context.Context, token string) (*Claim, error) {
	var claim Claim
	err := e.withLiveClaim(ctx, token, "", func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, _ []*StatusRow, now time.Time) error {
		out.LeaseExpiresAt = now.Add(time.Duration(job.LeaseSeconds) * time.Second)
		out.UpdatedAt = now
		claim = ClaimOf(job, out)
		withAccess(cat, job, &claim)
		return tx.PutRow(ctx, out)
	})
	if err != nil {
		return nil, err
	}
	return &claim, nil
}

// end finishes a live claim: complete, fail or release.
func (e *engine) end(ctx context.Context, tx Tx, cat *Catalog, how Ending, job Job, out StatusRow, inputs []*StatusRow, reason string, now time.Time) error {
	ins := make([]StatusRow, 0, len(inputs))
	for _, in := range inputs {
		if in == nil { // cannot happen for a live claim; keep going without it
			continue
		}
		ins = append(ins, *in)
	}
	newOut, newIns, keep := EndClaim(how, job, out, ins, reason, now)
	for i, n := range newIns {
		if n == nil {
			if err := del(ctx, tx, ins[i], now, "released"); err != nil {
				return err
			}
			continue
		}
		if err := put(ctx, tx, &ins[i], *n); err != nil {
			return err
		}
	}
	st := StatusNone
	if keep {
		if err := put(ctx, tx, &out, newOut); err != nil {
			return err
		}
		st = newOut.Status
	} else if err := del(ctx, tx, out, now, "released"); err != nil {
		return err
	}
	switch {
	case st == StatusReady:
		return enqueueConsumers(ctx, tx, cat, out.Dataset, out.DataID)
	case FreeForProducers(st):
		return tx.AddCandidate(ctx, Candidate{Job: job.ID, DataID: out.DataID, Resubmit: st == StatusResubmit})
	}
	return nil
}

func (e *engine) Complete(ctx context.Context, token string) error {
	return e.withLiveClaim(ctx, token, EndComplete, func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error {
		return e.end(ctx, tx, cat, EndComplete, job, out, inputs, "", now)
	})
}

// MaxReasonBytes bounds a failure or hold reason; longer ones keep their tail.
const MaxReasonBytes = 4096

// validReason makes a reason storable anywhere: valid UTF-8 (a job's stderr
// tail may hold any bytes), no NUL, at most MaxReasonBytes, cut on a
// character boundary and keeping the tail, where errors usually are.
func validReason(reason string) (string, error) {
	reason = strings.ReplaceAll(strings.ToValidUTF8(reason, "\uFFFD"), "\x00", "")
	if len(reason) > MaxReasonBytes {
		cut := len(reason) - MaxReasonBytes
		for cut < len(reason) && !utf8.RuneStart(reason[cut]) {
			cut++
		}
		reason = reason[cut:]
	}
	return reason, nil
}

func (e *engine) Fail(ctx context.Context, token, reason string) error {
	reason, err := validReason(reason)
	if err != nil {
		return err
	}
	return e.withLiveClaim(ctx, token, EndFail, func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error {
		return e.end(ctx, tx, cat, EndFail, job, out, inputs, reason, now)
	})
}

func (e *engine) Release(ctx context.Context, token string) error {
	return e.withLiveClaim(ctx, token, EndRelease, func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error {
		return e.end(ctx, tx, cat, EndRelease, job, out, inputs, "released", now)
	})
}

func (e *engine) ExpireLeases(ctx context.Context) (int, error) {
	ctx = WithActor(ctx, "reaper")
	n := 0
	var cat *Catalog
	for {
		now := e.clock.Now()
		keys, err := e.b.ExpiredClaims(ctx, now, expireBatch)
		if err != nil || len(keys) == 0 {
			return n, err
		}
		if cat == nil {
			if cat, err = e.catalog(ctx); err != nil {
				return n, err
			}
		}
		progressed := false
		for _, key := range keys {
			job, ok := cat.Jobs.Lookup(key.Job)
			var expired bool
			err := e.b.Update(ctx, func(tx Tx) error {
				expired = false
				inputs := job.Inputs
				if !ok || job.Output != key.Dataset {
					inputs = nil
				}
				if err := tx.LockChunks(ctx, key.DataID, []string{key.Dataset}, nil); err != nil {
					return err
				}
				keys := []RowKey{key}
				for _, in := range inputs {
					keys = append(keys, RowKey{Dataset: in, DataID: key.DataID, Job: key.Job, Role: RoleInput})
				}
				rows, err := tx.GetRows(ctx, keys)
				if err != nil {
					return err
				}
				out := rows[0]
				// Heartbeat, completion or another reaper may have come first.
				if out == nil || out.Status != StatusRunning || now.Before(out.LeaseExpiresAt) {
					return nil
				}
				if !ok {
					job = Job{ID: key.Job, Output: key.Dataset, MaxAttempts: DefaultMaxAttempts}
				}
				expired = true
				return e.end(ctx, tx, cat, EndExpire, job, *out, rows[1:], ReasonLeaseExpired, now)
			})
			if err != nil {
				return n, err
			}
			if expired {
				n++
				progressed = true
			}
		}
		if !progressed {
			return n, nil
		}
	}
}
