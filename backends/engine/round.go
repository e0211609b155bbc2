package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// One findNext round (next.go): the candidates a transaction reserved for
// the calls of one job, locked, read and claimed in queue order.

// claimRound claims cands, in order, for the seats of the calls, in order
// (seatsOf: a claimNext call has a seat per claim it asks for), inside tx;
// it drops every candidate it does not put back. A call is answered once
// its seats are filled, or when the job is at its limit; a call with seats
// left empty because candidates were stale hints, or because a frontier
// stood for them (one candidate stands for a schedule's next dataid),
// stays pending for the next round, unless the queue held fewer
// candidates than seats and none came back or moved on (queueMoved): then
// nothing more is claimable now, and it is answered.
func (e *engine) claimRound(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, cands []backends.Candidate, ops []*nextOp) error {
	short := len(cands) < len(ops) // the queue held no more candidates due now
	cands, twins := distinctCandidates(cands)
	now := e.clock.Now()
	prefetchGate(tx, cat, job, now)
	states, err := lockCandidates(ctx, tx, cat, job, cands)
	if err != nil {
		return err
	}
	g, err := openGate(ctx, tx, cat, job, now, true)
	if err != nil {
		return err
	}
	next := 0               // the next call to serve
	resubmitsAhead := false // a RESUBMIT sweep goes on: plain candidates wait
	for _, c := range cands {
		if resubmitsAhead && !c.Resubmit {
			// RESUBMIT outputs not found yet come first (SPEC §3
			// findNext): the candidates after them stay queued.
			break
		}
		if g != nil && g.full() {
			// At the job's limit: the calls left get nil, and the
			// candidates left stay queued for a claim once a slot is free.
			for _, op := range ops[next:] {
				op.pending = false
			}
			break
		}
		st, ok := states[c.DataID]
		if !ok {
			if err := dropCandidates(ctx, tx, append(twins[c.DataID], c)); err != nil {
				return err
			}
			// Its chunk cannot be claimed at all: its frontiers pass it,
			// as one passes a chunk that has a row.
			passed := backends.ClaimState{Job: job, Output: &backends.StatusRow{}}
			if err := e.advanceFrontiers(ctx, tx, cat, c, twins[c.DataID], passed, false, &resubmitsAhead); err != nil {
				return err
			}
			chained, err := chainMaybeEmpty(ctx, tx, cat, job, c, twins[c.DataID])
			if err != nil {
				return err
			}
			short = short && !chained && !queueMoved(c, twins[c.DataID], false)
			if reordered(ops, next, c, twins[c.DataID], false) {
				break
			}
			continue
		}
		claimed, back, err := e.takeCandidate(ctx, tx, cat, c, st, ops[min(next, len(ops)-1)], next < len(ops), g)
		if err != nil {
			return err
		}
		// Its duplicates go with it, only now that it is taken: a
		// candidate left queued at the limit keeps its twins, and a
		// frontier among them is dropped only beside its successor.
		for _, d := range twins[c.DataID] {
			if err := tx.DropCandidate(ctx, d); err != nil {
				return err
			}
		}
		if claimed {
			next++
		}
		// A chunk put back in its place (back: c's Resubmit flag was
		// stale) is the candidate's now: a frontier twin passes it as a
		// claimed one, rather than waiting at it.
		if err := e.advanceFrontiers(ctx, tx, cat, c, twins[c.DataID], st, claimed || back, &resubmitsAhead); err != nil {
			return err
		}
		chained, err := chainMaybeEmpty(ctx, tx, cat, job, c, twins[c.DataID])
		if err != nil {
			return err
		}
		short = short && !chained && !queueMoved(c, twins[c.DataID], back)
		if reordered(ops, next, c, twins[c.DataID], back || chained) {
			break
		}
	}
	if short && !resubmitsAhead {
		for _, op := range ops[next:] {
			op.pending = false
		}
	}
	return g.flush(ctx, tx)
}

// queueMoved tells whether handling candidate c (its twins) put a
// candidate due now back in the queue: c itself, in its true place (back),
// or the next candidate of a frontier that c or a twin stood for.
func queueMoved(c backends.Candidate, twins []backends.Candidate, back bool) bool {
	return back || c.Frontier || slices.ContainsFunc(twins, func(d backends.Candidate) bool { return d.Frontier })
}

// reordered tells whether the candidates left in a round must wait for the
// next because the seat to serve next belongs to a claimNext call, whose
// claims come in findNext's order, and the candidate c just handled went
// back into the queue in its true place (back) or moved a frontier on (c
// or a twin stood for one): either may now come before the candidates
// left. findNext calls have no order among themselves: they go on.
func reordered(seats []*nextOp, next int, c backends.Candidate, twins []backends.Candidate, back bool) bool {
	if next >= len(seats) || seats[next].want < 2 {
		return false
	}
	return queueMoved(c, twins, back)
}

// advanceFrontiers moves on the frontiers just taken at one chunk: c when
// it stands for one, and a twin of the other kind (distinctCandidates).
// It notes in resubmitsAhead that a RESUBMIT sweep goes on.
func (e *engine) advanceFrontiers(ctx context.Context, tx backends.Tx, cat *backends.Catalog, c backends.Candidate, twins []backends.Candidate, st backends.ClaimState, claimed bool, resubmitsAhead *bool) error {
	moved := []backends.Candidate{}
	if c.Frontier {
		moved = append(moved, c)
	}
	for _, d := range twins {
		if d.Frontier && d.Resubmit != c.Resubmit && !slices.ContainsFunc(moved, func(m backends.Candidate) bool { return m.Resubmit == d.Resubmit }) {
			moved = append(moved, d)
		}
	}
	for _, f := range moved {
		if err := e.advanceFrontier(ctx, tx, cat, f, st, claimed); err != nil {
			return err
		}
		if f.Resubmit {
			*resubmitsAhead = true
		}
	}
	return nil
}

// takeCandidate claims candidate c (its chunk in st) for op, when serve is
// true and the rules allow it, and tells whether it did; it drops c or
// puts it back in its true place, and tells whether it did the latter
// with a candidate due now (back).
func (e *engine) takeCandidate(ctx context.Context, tx backends.Tx, cat *backends.Catalog, c backends.Candidate, st backends.ClaimState, op *nextOp, serve bool, g *slotGate) (claimed, back bool, err error) {
	if requeued, err := requeueStale(ctx, tx, c, st); err != nil || requeued {
		return false, requeued, err
	}
	if serve && checkExpected(cat, st.Job, c.DataID) == nil {
		claim, err := e.claimState(ctx, tx, cat, st, op.executor, backends.ActorFrom(op.ctx), backends.ModeNext, g)
		if err != nil && !errors.Is(err, backends.ErrLocked) {
			return false, false, err
		}
		if err == nil {
			op.claims = append(op.claims, claim)
			op.pending = op.seatsLeft() > 0
			claimed = true
		} else if until, ok := e.comesBack(cat, c, st, err); ok {
			later := c
			later.NotBefore, later.Handle = until, nil
			if err := tx.AddCandidate(ctx, later); err != nil {
				return false, false, err
			}
		}
	}
	return claimed, false, tx.DropCandidate(ctx, c)
}

// comesBack tells when candidate c, refused by err (its chunk in st),
// goes back in the queue, if it does: when only time stands in the way,
// then; a dataid a scheduled job's frontier queued ahead of it, refused
// for a passing reason, shortly, as the frontier would be (nothing else
// would queue it again: the frontier has passed it). A frontier moves on
// itself (advanceFrontier).
func (e *engine) comesBack(cat *backends.Catalog, c backends.Candidate, st backends.ClaimState, err error) (time.Time, bool) {
	if c.Frontier {
		return time.Time{}, false
	}
	if until, ok := liftsAt(err); ok {
		return until, true
	}
	if !c.Resubmit && st.Output == nil && len(st.Job.Inputs) == 0 && scheduleDef(cat, st.Job) != nil {
		return e.clock.Now().Add(frontierRetry), true
	}
	return time.Time{}, false
}

func dropCandidates(ctx context.Context, tx backends.Tx, cands []backends.Candidate) error {
	for _, c := range cands {
		if err := tx.DropCandidate(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// liftsAt tells, for a LOCKED refusal whose every blocker lifts at a known
// time (NOT_DUE, BACKOFF), when the last of them lifts.
func liftsAt(err error) (time.Time, bool) {
	var e *backends.Error
	if !errors.As(err, &e) || len(e.Blockers) == 0 {
		return time.Time{}, false
	}
	var until time.Time
	for _, b := range e.Blockers {
		if b.Until.IsZero() {
			return time.Time{}, false
		}
		if b.Until.After(until) {
			until = b.Until
		}
	}
	return until, true
}

// distinctCandidates keeps one candidate per dataid and returns the
// duplicates by dataid: a duplicate hint is dropped when the one kept is
// taken, as a single findNext would drop it once the first is claimed.
// The one kept stands for a frontier of its kind when any of them did.
func distinctCandidates(cands []backends.Candidate) ([]backends.Candidate, map[string][]backends.Candidate) {
	var distinct []backends.Candidate
	var twins map[string][]backends.Candidate
	seen := map[string]int{}
	for _, c := range cands {
		if i, ok := seen[c.DataID]; ok {
			// A frontier of the other kind (a RESUBMIT sweep beside
			// another) stays a twin: the round moves it on its own way.
			distinct[i].Frontier = distinct[i].Frontier || (c.Frontier && c.Resubmit == distinct[i].Resubmit)
			if twins == nil {
				twins = map[string][]backends.Candidate{}
			}
			twins[c.DataID] = append(twins[c.DataID], c)
			continue
		}
		seen[c.DataID] = len(distinct)
		distinct = append(distinct, c)
	}
	return distinct, twins
}

// lockCandidates locks the chunks a claim of job at each candidate
// touches, in ascending dataid order, and reads what the rules need about
// them, by dataid. A candidate whose reads cannot be computed has no
// state: the caller drops it.
func lockCandidates(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, cands []backends.Candidate) (map[string]backends.ClaimState, error) {
	byID := slices.Clone(cands)
	slices.SortFunc(byID, func(a, b backends.Candidate) int { return cmp.Compare(a.DataID, b.DataID) })
	reads := make([][]backends.Read, len(byID))
	plan := lockPlan{}
	if w, ok := tx.(backends.WideLocker); ok && !job.Mapped() && len(byID)*(1+len(job.Inputs)) > backends.WideLocks {
		// A claimNext round of many seats (a mapped job's plan asks
		// for itself).
		if err := w.LockWide(ctx); err != nil {
			return nil, err
		}
	}
	for i := 0; i < len(byID); i++ {
		c := byID[i]
		var err error
		if reads[i], err = claimReads(ctx, tx, cat, job, c.DataID); err != nil {
			if !errors.Is(err, backends.ErrInvalidArgument) {
				return nil, err
			}
			// What it reads cannot be computed (a mapping the catalog
			// no longer supports at this dataid): dropped, so that the
			// candidates after it are still served.
			byID = slices.Delete(byID, i, i+1)
			reads = slices.Delete(reads, i, i+1)
			i--
			continue
		}
		if job.Mapped() {
			plan.addClaim(job, c.DataID, reads[i], nil)
		} else if err := tx.LockChunks(ctx, c.DataID, []string{job.Output}, job.Inputs); err != nil {
			return nil, err
		}
	}
	if err := plan.lock(ctx, tx); err != nil {
		return nil, err
	}
	var keys []backends.RowKey
	for i, c := range byID {
		keys = append(keys, claimKeys(cat, job, c.DataID, reads[i])...)
	}
	rows, err := tx.GetRows(ctx, keys)
	if err != nil {
		return nil, err
	}
	states := make(map[string]backends.ClaimState, len(byID))
	for i, c := range byID {
		n := 1 + 2*len(reads[i])
		states[c.DataID] = claimStateOf(cat, job, c.DataID, reads[i], rows[:n])
		rows = rows[n:]
	}
	return states, nil
}

// requeueStale puts candidate c back in its true place in the queue when
// its Resubmit flag is stale, and tells whether it did. The flag was true
// when the candidate was added, but the output may have moved on since
// (claimed from RESUBMIT, then failed; or a duplicate hint): RESUBMIT
// chunks come first and the others strictly by dataid.
func requeueStale(ctx context.Context, tx backends.Tx, c backends.Candidate, st backends.ClaimState) (bool, error) {
	out := backends.StatusOf(st.Output)
	isResubmit := out == backends.StatusResubmit
	if c.Resubmit == isResubmit || !backends.FreeForProducers(out) {
		return false, nil
	}
	if err := tx.DropCandidate(ctx, c); err != nil {
		return true, err
	}
	back := backends.Candidate{Job: st.Job.ID, DataID: c.DataID, Resubmit: isResubmit}
	if out == backends.StatusFailed {
		back.NotBefore = st.Output.RetryAt
	}
	return true, tx.AddCandidate(ctx, back)
}
