package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Claims: findNext, claim and force make them; heartbeat, complete, fail
// and release act on a live one; the reaper ends those past their lease.

// claimKeys are the rows the rules need about job at dataid reading reads:
// its OUTPUT row, then the OUTPUT row of each input chunk it reads, then
// its INPUT rows on them.
func claimKeys(cat *backends.Catalog, job backends.Job, dataid string, reads []backends.Read) []backends.RowKey {
	keys := make([]backends.RowKey, 0, 1+2*len(reads))
	keys = append(keys, outputKey(cat, job, dataid))
	for _, r := range reads {
		keys = append(keys, chunkOutputKey(cat, r.Dataset, r.DataID))
	}
	for _, r := range reads {
		keys = append(keys, backends.ReadKey(job.ID, r, dataid))
	}
	return keys
}

// claimStateOf builds the claim state from the rows of claimKeys.
func claimStateOf(cat *backends.Catalog, job backends.Job, dataid string, reads []backends.Read, rows []*backends.StatusRow) backends.ClaimState {
	n := len(reads)
	return backends.ClaimState{Job: job, RowJob: cat.RowJob(job), DataID: dataid, Output: rows[0], Reads: reads, Upstream: rows[1 : 1+n], Local: rows[1+n:],
		Unexpected: unexpectedInput(cat, job, dataid, reads)}
}

// unexpectedInput is the first input with a DYNAMIC dimension that job
// reads across dimensions or by dimension without a read among reads: none of
// its tuples is expected for the output at dataid (a DYNAMIC dimension
// read whole holds no value yet at its window, or the value read by value
// is not the input's), so the output is not due until one is. An input
// whose DYNAMIC dimensions are all read by value, each value the input's,
// that the window maps before the values are expected (a lookback of the
// day before at a customer's first day) is read as nothing, as an input of
// STATIC and time dimensions alone is before its start (section 9), however
// it is read.
func unexpectedInput(cat *backends.Catalog, job backends.Job, dataid string, reads []backends.Read) string {
	if !job.Mapped() {
		return ""
	}
	for _, in := range job.Inputs {
		m := job.Mapping(in)
		if m.Kind != partition.AcrossDimensions && m.Kind != partition.ByDimension {
			continue
		}
		if len(dynamicDimNames(cat.DefOf(in))) == 0 && (m.Kind == partition.ByDimension || cat.DefOf(job.Output).Kind.IsTime()) {
			// Read as nothing, and offered so (a one-axis output's chain,
			// readsNothingChains); a roll-up into an output with
			// dimensions stays not due.
			continue
		}
		if slices.ContainsFunc(reads, func(r backends.Read) bool { return r.Dataset == in }) {
			continue
		}
		if m.Kind == partition.ByDimension && valuesReadByValue(cat.DefOf(job.Output), cat.DefOf(in), m, dataid) {
			continue
		}
		return in
	}
	return ""
}

// valuesReadByValue reports whether m reads every DYNAMIC dimension of in
// by value and the output dataid's value of each is one of in's.
func valuesReadByValue(out, in partition.Def, m partition.Mapping, dataid string) bool {
	values, ok := out.SplitDataID(dataid)
	if !ok {
		return false
	}
	for _, name := range dynamicDimNames(in) {
		if !m.ReadsByValue(out, in, name) {
			return false
		}
		i := slices.IndexFunc(out.Dimensions, func(d partition.Dimension) bool { return d.Name == name })
		if i < 0 || !in.HasMember(name, values[i]) {
			return false
		}
	}
	return true
}

// loadClaimState reads what the rules need about job at dataid reading
// reads.
func loadClaimState(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataid string, reads []backends.Read) (backends.ClaimState, error) {
	rows, err := tx.GetRows(ctx, claimKeys(cat, job, dataid, reads))
	if err != nil {
		return backends.ClaimState{}, err
	}
	return claimStateOf(cat, job, dataid, reads, rows), nil
}

// lockClaimState locks the chunks a claim of job at dataid touches (the
// output chunk exclusively, the input chunks it reads shared) and reads
// what the rules need about them. A job without mappings locks one dataid
// in one call, as it always did.
func lockClaimState(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataid string) (backends.ClaimState, error) {
	reads, err := claimReads(ctx, tx, cat, job, dataid)
	if err != nil {
		return backends.ClaimState{}, err
	}
	if !job.Mapped() {
		err = tx.LockChunks(ctx, dataid, []string{job.Output}, job.Inputs)
	} else {
		plan := lockPlan{}
		plan.addClaim(job, dataid, reads, nil)
		err = plan.lock(ctx, tx)
	}
	if err != nil {
		return backends.ClaimState{}, err
	}
	return loadClaimState(ctx, tx, cat, job, dataid, reads)
}

// claimIn evaluates and, when allowed, makes a claim inside tx. A force
// also invalidates what downstream jobs computed from the chunk it
// rewrites, as resubmit with cascade does, and is refused while any of
// them reads or writes at that dataid.
//
// hint lists chunks a force locks besides those it finds (lockCascade).
func (e *engine) claimIn(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataid, executor string, mode backends.ClaimMode, hint []backends.Read) (*backends.Claim, error) {
	if err := checkExpected(cat, job, dataid); err != nil {
		return nil, err
	}
	prefetchSlots(tx, slotKeys(job), false)
	if mode != backends.ModeForce {
		st, err := lockClaimState(ctx, tx, cat, job, dataid)
		if err != nil {
			return nil, err
		}
		return e.claimGated(ctx, tx, cat, st, executor, mode)
	}
	reads, err := claimReads(ctx, tx, cat, job, dataid)
	if err != nil {
		return nil, err
	}
	plan := lockPlan{}
	plan.addClaim(job, dataid, reads, nil)
	if err := lockCascade(ctx, tx, cat, job.Output, dataid, plan, hint); err != nil {
		return nil, err
	}
	st, err := loadClaimState(ctx, tx, cat, job, dataid, reads)
	if err != nil {
		return nil, err
	}
	reason := "upstream " + job.Output + "/" + dataid + " forced by " + backends.ActorFrom(ctx)
	if _, err := invalidateDownstream(ctx, tx, cat, job.Output, dataid, reason, e.clock.Now()); err != nil {
		return nil, err
	}
	return e.claimGated(ctx, tx, cat, st, executor, mode)
}

// claimGated makes the claim st describes with the job's slot records
// read, checked (except by a force) and written in the same transaction.
func (e *engine) claimGated(ctx context.Context, tx backends.Tx, cat *backends.Catalog, st backends.ClaimState, executor string, mode backends.ClaimMode) (*backends.Claim, error) {
	g, err := openGate(ctx, tx, cat, st.Job, e.clock.Now(), true)
	if err != nil {
		return nil, err
	}
	claim, err := e.claimState(ctx, tx, cat, st, executor, backends.ActorFrom(ctx), mode, g)
	if err != nil {
		return nil, err
	}
	return claim, g.flush(ctx, tx)
}

// claimState makes the claim st describes, if the rules allow it, inside
// the transaction that locked and loaded st.
// g is the job's slot gate (nil without limits): a claim other than a
// force must fit, and every claim holds a slot.
func (e *engine) claimState(ctx context.Context, tx backends.Tx, cat *backends.Catalog, st backends.ClaimState, executor, actor string, mode backends.ClaimMode, g *slotGate) (*backends.Claim, error) {
	job, dataid := st.Job, st.DataID
	st = withSchedule(st, cat, e.clock.Now())
	st, err := withValue(ctx, tx, st)
	if err != nil {
		return nil, err
	}
	bs := st.Blockers(mode)
	if mode != backends.ModeForce {
		bs = append(bs, g.blockers(dataid, backends.StatusOf(st.Output))...)
	}
	if len(bs) > 0 {
		return nil, backends.Locked(bs, "job %q cannot claim dataid %q now: %s", job.ID, dataid, backends.DescribeBlockers(bs))
	}
	fence, err := tx.NextFence(ctx, job.Output, dataid)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	w := st.Apply(executor, backends.NewToken(cat.RowJob(job), job.Output, dataid, fence), fence, now)
	if w.Superseded {
		ev := event(actor, st.Output, *st.Output)
		ev.Time, ev.To, ev.Reason = now, backends.StatusRunning, "superseded by force"
		if err := tx.AppendEvent(ctx, ev); err != nil {
			return nil, err
		}
		if err := releaseDropped(ctx, tx, actor, st, now); err != nil {
			return nil, err
		}
	}
	if err := put(ctx, tx, actor, st.Output, w.Output); err != nil {
		return nil, err
	}
	for i, in := range w.Inputs {
		if err := put(ctx, tx, actor, st.Local[i], in); err != nil {
			return nil, err
		}
	}
	superseded := ""
	if w.Superseded {
		superseded = st.Output.Token
	}
	g.hold(w.Output, superseded)
	withAccess(cat, job, &w.Claim)
	return &w.Claim, nil
}

func (e *engine) claimOne(ctx context.Context, jobID, dataid, executor string, mode backends.ClaimMode) (*backends.Claim, error) {
	if err := backends.ValidateDataID(dataid); err != nil {
		return nil, err
	}
	if err := backends.ValidateExecutor(executor); err != nil {
		return nil, err
	}
	var claim *backends.Claim
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		job, err := cat.Job(jobID)
		if err != nil {
			return err
		}
		return withReplans(func(hint []backends.Read) error {
			return e.update(ctx, cat, func(tx backends.Tx) error {
				var err error
				claim, err = e.claimIn(ctx, tx, cat.Catalog, job, dataid, executor, mode, hint)
				return err
			})
		})
	})
	if err != nil {
		return nil, err
	}
	return claim, nil
}

func (e *engine) Claim(ctx context.Context, job, dataid, executor string) (*backends.Claim, error) {
	return e.claimOne(ctx, job, dataid, executor, backends.ModeClaim)
}

func (e *engine) Force(ctx context.Context, job, dataid, executor string) (*backends.Claim, error) {
	return e.claimOne(ctx, job, dataid, executor, backends.ModeForce)
}

func (e *engine) Heartbeat(ctx context.Context, token string) (*backends.Claim, error) {
	var claim backends.Claim
	err := e.withLiveClaim(ctx, token, "", func(ctx context.Context, tx backends.Tx, c liveClaim) error {
		out := c.out
		out.LeaseExpiresAt = c.now.Add(c.job.Lease())
		out.UpdatedAt = c.now
		claim = liveClaimOf(c.cat, c.job, out)
		return tx.PutRow(ctx, out)
	})
	if err != nil {
		return nil, err
	}
	return &claim, nil
}

// end finishes a live claim: complete, fail, release or expire.
func (e *engine) end(ctx context.Context, tx backends.Tx, c liveClaim, how backends.Ending, reason string) error {
	actor := backends.ActorFrom(ctx)
	ins := make([]backends.StatusRow, 0, len(c.inputs))
	for _, in := range c.inputs {
		if in == nil { // cannot happen for a live claim; keep going without it
			continue
		}
		ins = append(ins, *in)
	}
	if c.slots != nil {
		c.slots.add(c.job, c.out.Token)
	}
	newOut, newIns, keep := backends.EndClaim(how, c.job, c.out, ins, reason, c.now)
	for i, n := range newIns {
		if n == nil {
			if err := del(ctx, tx, actor, ins[i], c.now, "released"); err != nil {
				return err
			}
			continue
		}
		if err := put(ctx, tx, actor, &ins[i], *n); err != nil {
			return err
		}
	}
	st := backends.StatusNone
	if keep {
		if err := put(ctx, tx, actor, &c.out, newOut); err != nil {
			return err
		}
		st = newOut.Status
	} else if err := del(ctx, tx, actor, c.out, c.now, "released"); err != nil {
		return err
	}
	switch {
	case st == backends.StatusReady:
		return enqueueConsumers(ctx, tx, c.cat, c.out.Dataset, c.out.DataID, c.now)
	case backends.FreeForProducers(st):
		return tx.AddCandidate(ctx, backends.Candidate{Job: c.job.ID, DataID: c.out.DataID, Resubmit: st == backends.StatusResubmit, NotBefore: newOut.RetryAt})
	}
	return nil
}

// ending is the liveFn that ends a claim how, for reason.
func (e *engine) ending(how backends.Ending, reason string) liveFn {
	return func(ctx context.Context, tx backends.Tx, c liveClaim) error {
		return e.end(ctx, tx, c, how, reason)
	}
}

func (e *engine) Complete(ctx context.Context, token string) error {
	return e.withLiveClaim(ctx, token, backends.EndComplete, e.ending(backends.EndComplete, ""))
}

func (e *engine) Fail(ctx context.Context, token, reason string) error {
	return e.withLiveClaim(ctx, token, backends.EndFail, e.ending(backends.EndFail, backends.CutReason(reason)))
}

func (e *engine) Release(ctx context.Context, token string) error {
	return e.withLiveClaim(ctx, token, backends.EndRelease, e.ending(backends.EndRelease, "released"))
}

// ExpireLeases ends, as failed, the claims past their lease, a key at a
// time through the live-claim operations (live.go): the reaper's operation
// checks, in its transaction, that the claim is still RUNNING and past its
// lease.
func (e *engine) ExpireLeases(ctx context.Context) (int, error) {
	ctx = backends.WithActor(ctx, "reaper")
	n := 0
	for {
		keys, err := e.b.ExpiredClaims(ctx, e.clock.Now(), expireBatch)
		if err != nil || len(keys) == 0 {
			return n, err
		}
		progressed := false
		for _, key := range keys {
			op := &liveOp{key: key, fn: e.ending(backends.EndExpire, backends.ReasonLeaseExpired)}
			if err := e.live.do(ctx, "", op); err != nil {
				return n, err
			}
			if op.acted {
				n++
				progressed = true
			}
		}
		if !progressed {
			return n, nil
		}
	}
}
