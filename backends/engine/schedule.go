package engine

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Backoff and schedules (SPEC §3 fail, findNext; §8 Schedules).
//
// A failed chunk of a job with a retry delay gets a retry time on its
// OUTPUT row (StatusRow.RetryAt), and its findNext candidate is hidden
// until then (Candidate.NotBefore): nothing polls, and the chunks after it
// are claimed meanwhile.
//
// A scheduled job (no inputs, an output with a time or bounded partition
// definition) keeps one frontier candidate: the lowest expected dataid it
// has not claimed yet, hidden until that dataid is due. Taking the
// frontier, whether the claim is made or the chunk already has a row,
// moves it to the next expected dataid, due at its own time; a claim made
// at it also queues the dataids after it that are due already, up to
// scheduleAhead, the frontier at the last (one round then serves several
// claims). So the queue holds at most scheduleAhead entries however many
// windows the definition spans, and a definition that started ten years
// ago costs one candidate per claim.
// The frontier is placed at the first expected dataid without a row when
// the job is created, becomes scheduled, or its output's definition
// changes, in the transaction storing that change (frontierSeed); a
// frontier left behind by a change walks to the new definition's dataids
// or meets the new one, and two frontiers that meet at a dataid merge
// into one (Tx.DropCandidate).
//
// A job that is not scheduled but reads an input through LATEST or ALL
// gets frontier candidates too, sweeps: a chunk of such an input becoming
// READY may make claimable any output after it (LATEST) or any output at
// all (ALL), so it adds two candidates at the first of them, which walk
// the outputs whose windows have started, claiming what they can
// (advanceSweep): one looks for RESUBMIT outputs (Candidate.Resubmit: it
// comes first in the queue, and findNext takes RESUBMIT outputs first),
// the other for the rest. A frontier taken at a chunk that has a row, and
// a sweep at every step, look at the rows ahead as a hint and go straight
// to the next chunk without one or free for producers (nextOpen): walking
// a stretch of produced chunks costs a read per page of them, not a
// findNext round per chunk. From an anchor, a sweep's step also queues
// the outputs it finds up to the next anchor, so that a round serves
// several claims.

// frontierRetry is how long a frontier whose claim was refused for a
// passing reason (not its due time) stays hidden before it is tried again.
const frontierRetry = time.Second

// outputDef is the partition definition of job's output, nil when none.
func outputDef(cat *backends.Catalog, job backends.Job) *partition.Def {
	def := cat.Datasets.Get(job.Output).Partitions
	if def == nil || def.IsZero() {
		return nil
	}
	return def
}

// scheduleDef is the definition a job is scheduled by: its output's, when
// the job has no inputs, or reads every input through LATEST or ALL
// (undriven), and the definition has a last due dataid at any time (a time
// kind, or a bounded one). nil: the job is not scheduled.
//
// An undriven job needs the frontier as a job without inputs does: its
// inputs becoming READY start sweeps over the outputs whose windows have
// started then (addSweep), and nothing else queues an output whose window
// starts later. Its frontier is due when the window starts (frontierAt).
func scheduleDef(cat *backends.Catalog, job backends.Job) *partition.Def {
	if len(job.Inputs) > 0 && !undriven(job) {
		return nil
	}
	def := outputDef(cat, job)
	if def == nil || !(def.Windowed() || def.Bounded()) {
		return nil
	}
	return def
}

// undriven tells whether job has inputs and reads every one of them
// through LATEST or ALL: no input chunk maps to an output window that
// starts after it.
func undriven(job backends.Job) bool {
	if len(job.Inputs) == 0 {
		return false
	}
	for _, in := range job.Inputs {
		if !sweptKind(job.Mapping(in).Kind) {
			return false
		}
	}
	return true
}

// checkExpected refuses a dataid that the definition of job's output does
// not expect.
func checkExpected(cat *backends.Catalog, job backends.Job, dataid string) error {
	if def := outputDef(cat, job); def != nil && !def.Contains(dataid) {
		what := fmt.Sprintf("%s partitions from %q", def.Kind, firstExpected(def))
		if def.Kind == partition.Dimensional {
			// Its dimensions in order, and an example of a tuple.
			what = fmt.Sprintf("dimensions %s, such as %q", strings.Join(def.DimensionNames(), " | "), firstExpected(def))
		}
		return backends.InvalidArgument("dataid %q is not an expected dataid of dataset %q (%s); job %q produces only those",
			dataid, job.Output, what, job.ID)
	}
	return nil
}

// firstExpected is the lowest dataid def expects ("" for none).
func firstExpected(def *partition.Def) string {
	first, _ := def.First()
	return first
}

// withSchedule gives st what the time rules need: the clock and, for a
// job without inputs, its output's partition definition.
func withSchedule(st backends.ClaimState, cat *backends.Catalog, now time.Time) backends.ClaimState {
	st.Now = now
	if len(st.Job.Inputs) == 0 {
		st.Def = outputDef(cat, st.Job)
	}
	return st
}

// frontierAt is the frontier candidate of job at dataid id of def: due
// when id is due, or, for an undriven job, when its window starts (the
// outputs its inputs queue are those whose windows have started).
func frontierAt(job backends.Job, def *partition.Def, id string) backends.Candidate {
	due, _ := def.Due(id) // id comes from def: it has a window
	if len(job.Inputs) > 0 && def.Windowed() {
		due, _, _ = def.Window(id)
	}
	return backends.Candidate{Job: job.ID, DataID: id, Frontier: true, NotBefore: due}
}

// advanceFrontier moves the frontier candidate c, just taken from the
// queue, after findNext looked at its chunk (st; claimed tells whether it
// was claimed now). A frontier of a job that is not scheduled is a sweep
// (advanceSweep). A job without inputs that could not claim a chunk
// without a row (refused for a passing reason) tries it again shortly; an
// undriven job's frontier passes it: what blocks it is a chunk of a
// LATEST or ALL input, which starts a sweep over it when it becomes READY.
func (e *engine) advanceFrontier(ctx context.Context, tx backends.Tx, cat *backends.Catalog, c backends.Candidate, st backends.ClaimState, claimed bool) error {
	if c.Resubmit {
		return e.advanceSweep(ctx, tx, cat, c, st)
	}
	def := scheduleDef(cat, st.Job)
	if def == nil {
		return e.advanceSweep(ctx, tx, cat, c, st)
	}
	id := c.DataID
	if !claimed && st.Output == nil && def.Contains(id) && len(st.Job.Inputs) == 0 {
		f := frontierAt(st.Job, def, id)
		if now := e.clock.Now(); !now.Before(f.NotBefore) {
			f.NotBefore = now.Add(frontierRetry) // refused for a passing reason
		}
		return tx.AddCandidate(ctx, f)
	}
	next, err := e.nextOpen(ctx, tx, cat, st.Job, *def, id, st.Output != nil, "", nil, 1, backends.FreeForProducers)
	if err != nil || len(next) == 0 {
		return err
	}
	if claimed && len(st.Job.Inputs) == 0 {
		next = dueAhead(*def, next[0], e.clock.Now())
		for _, ahead := range next[:len(next)-1] {
			if err := tx.AddCandidate(ctx, backends.Candidate{Job: st.Job.ID, DataID: ahead}); err != nil {
				return err
			}
		}
	}
	return tx.AddCandidate(ctx, frontierAt(st.Job, def, next[len(next)-1]))
}

// scheduleAhead is how many dataids a scheduled job's frontier queues
// when its claim is made, at most: the dataids from the next one on that
// are due already, the frontier at the last of them (dueAhead). A
// claimNext, or findNext calls arriving together, are then served by one
// round for several claims, not a round a claim (the frontier moving on
// ends a round that serves a claimNext: reordered).
const scheduleAhead = 16

// dueAhead is from and the dataids after it in def that are due at now,
// scheduleAhead at most, up to def's end; from alone when it is not due.
func dueAhead(def partition.Def, from string, now time.Time) []string {
	out := []string{from}
	if due, _ := def.Due(from); due.After(now) {
		return out
	}
	for id := from; len(out) < scheduleAhead; {
		next, ok := def.Next(id)
		if !ok {
			break
		}
		if due, _ := def.Due(next); due.After(now) {
			break
		}
		out = append(out, next)
		id = next
	}
	return out
}

// advanceSweep moves a sweep, the frontier candidate c of a job that is not
// scheduled, just taken from the queue (its chunk in st), to the next
// output dataid, up to the last whose window has started; past it the
// sweep ends. A sweep walks the outputs an input chunk read through LATEST
// or ALL may have made claimable (enqueueMapped): that reverse mapping is
// open-ended, so one candidate walks it rather than one per output. It
// does not wait at an output it could not claim: what blocked it (a chunk
// of another input) queues it when it becomes READY. For the same reason
// it passes every output whose chunk of an input read one to one is not
// READY (nextOpen).
func (e *engine) advanceSweep(ctx context.Context, tx backends.Tx, cat *backends.Catalog, c backends.Candidate, st backends.ClaimState) error {
	def := outputDef(cat, st.Job)
	if def == nil || !sweeps(st.Job) && !dimensional(cat, st.Job) {
		// The job no longer reads anything through LATEST or ALL (a
		// change of a DYNAMIC dimension's values sweeps a job writing or
		// reading dimensions too: dynamicdims.go).
		return nil
	}
	last, ok := lastStarted(*def, sweepHorizon(cat, st.Job, *def, e.clock.Now()))
	if !ok {
		return nil
	}
	var driving []string // inputs read one to one: a chunk not READY queues its output
	for _, in := range st.Job.Inputs {
		if k := st.Job.Mapping(in).Kind; k == partition.Identity || k == "" {
			driving = append(driving, in)
		}
	}
	// The outputs ahead are read with each step, and the next sweepAhead
	// that may be claimable are queued at once: rounds then serve several
	// claims each, as for outputs queued one by one, and the sweep goes on
	// from the last of them.
	match := backends.FreeForProducers
	if c.Resubmit {
		// The RESUBMIT outputs, which findNext takes first.
		match = func(s backends.Status) bool { return s == backends.StatusResubmit }
	}
	// From an anchor it queues the outputs up to the next one; from
	// anywhere else it steps to the next output only, so that a sweep
	// started behind another queues nothing the other has queued before
	// it reaches an anchor, where the two merge.
	want := 1
	if anchor(c.DataID) {
		want = sweepAhead
	}
	next, err := e.nextOpen(ctx, tx, cat, st.Job, *def, c.DataID, true, last, driving, want, match)
	if err != nil || len(next) == 0 {
		return err
	}
	for _, id := range next[:len(next)-1] {
		if err := tx.AddCandidate(ctx, backends.Candidate{Job: st.Job.ID, DataID: id, Resubmit: c.Resubmit}); err != nil {
			return err
		}
	}
	f := frontierAt(st.Job, def, next[len(next)-1])
	f.Resubmit = c.Resubmit
	if mayReadNothing(st.Job) {
		f.NotBefore = time.Time{} // it walks windows not started (sweepHorizon)
	}
	return tx.AddCandidate(ctx, f)
}

// sweepHorizon is the instant up to whose window a sweep of job over def
// walks: now, or, for a job whose first tuples of a value may read
// nothing (mayReadNothing), as far as the latest value's such tuples may
// lie (its since, moved on by the lookback's reach): those are claimable
// at once, whether their window has started or not, as any output whose
// reads are READY is, and nothing else queues them.
func sweepHorizon(cat *backends.Catalog, job backends.Job, def partition.Def, now time.Time) time.Time {
	if !mayReadNothing(job) || def.Kind != partition.Dimensional {
		return now
	}
	reach := emptyReach(cat, job)
	horizon := now
	for _, d := range def.Dimensions {
		for _, m := range d.Members {
			if t := time.Unix(m.Since, 0).Add(reach); t.After(horizon) {
				horizon = t
			}
		}
	}
	return horizon
}

// emptyReach is how long after a value's since job's tuples of it may
// read nothing, at most: the longest lookback ending before its output
// (mayReadNothing), in the input's longest windows, and one more.
func emptyReach(cat *backends.Catalog, job backends.Job) time.Duration {
	var reach time.Duration
	for _, in := range job.Inputs {
		idef := cat.DefOf(in)
		for _, x := range job.Mapping(in).Entries() {
			if x.Kind != partition.TimeWindow || x.EndOffset >= 0 {
				continue
			}
			i := slices.IndexFunc(idef.Dimensions, func(d partition.Dimension) bool { return d.Name == x.Dimension })
			if i < 0 {
				continue
			}
			reach = max(reach, time.Duration(1-x.EndOffset)*longestWindow(idef.Dimensions[i].Kind))
		}
	}
	return reach
}

// emptyStop is one window entry of a job whose tuples may read nothing:
// the input's time dimension (or its one-dimensional definition) and how
// many of its windows the entry's lookback ends before its output
// (-EndOffset). from is, when either side is one-dimensional, the start
// of the input's first window: what the entry reads is then there from
// it, whatever value of the output reads it (stopAt).
type emptyStop struct {
	def  partition.Def
	k    int
	from time.Time
}

// emptyStops are job's emptyStop, one per entry not ending after its
// output (one ending with it reads its input from the input's start).
func emptyStops(cat *backends.Catalog, job backends.Job) []emptyStop {
	var out []emptyStop
	for _, in := range job.Inputs {
		idef := cat.DefOf(in)
		for _, x := range startEntries(cat, job, in) {
			if x.Kind != partition.TimeWindow || x.EndOffset > 0 {
				continue
			}
			st := emptyStop{k: -x.EndOffset}
			if i := slices.IndexFunc(idef.Dimensions, func(d partition.Dimension) bool { return d.Name == x.Dimension }); i >= 0 {
				st.def = idef.Dimensions[i].Def
			} else if x.Dimension == "" && idef.Kind.IsTime() {
				st.def = idef
			} else {
				continue
			}
			if x.Dimension == "" || x.OutputDimension == "" {
				_, begins, ok := firstWindow(st.def)
				if !ok {
					continue
				}
				st.from = begins
			}
			out = append(out, st)
		}
	}
	return out
}

// stopAt is the instant from which a value expected from since is read by
// every output window of the entries in stops: the start of the input
// window k windows after the one holding since (the latest over the
// entries). An output window ending by then reads nothing of the value.
func stopAt(stops []emptyStop, since time.Time) time.Time {
	var stop time.Time
	for _, st := range stops {
		since := since
		if !st.from.IsZero() {
			since = st.from
		}
		id, ok := lastStarted(st.def, since)
		if !ok {
			if id, ok = st.def.First(); !ok {
				continue
			}
		}
		for range st.k {
			if id, ok = st.def.Next(id); !ok {
				break
			}
		}
		t := since.Add(time.Duration(st.k) * longestWindow(st.def.Kind)) // past the input's end: at most this
		if ok {
			if begins, _, err := st.def.Window(id); err == nil {
				t = begins
			}
		}
		if t.After(stop) {
			stop = t
		}
	}
	return stop
}

// memberSpan is a value's windows whose tuples may read nothing, first to
// last (nextMaybeEmpty).
type memberSpan struct{ value, first, last string }

// spansKey names the spans of one dimension's members (the catalog's
// slice, which a change replaces, never edits) under one job's stops.
type spansKey struct {
	members          *partition.Member
	n                int
	stops            string // the emptyStops, written out
	kind             partition.Kind
	start, end, zone string
}

// spansCache keeps the spans last worked out for each members slice, a
// handful: a sweep steps once per claim, and working them out again for
// a thousand values each step would cost more than the step.
var spansCache struct {
	sync.Mutex
	m map[spansKey][]memberSpan
}

// memberSpans are the spans of members over the time dimension tdef.
func memberSpans(tdef partition.Def, members []partition.Member, stops []emptyStop) []memberSpan {
	if len(members) == 0 {
		return nil
	}
	key := spansKey{&members[0], len(members), fmt.Sprint(stops), tdef.Kind, tdef.Start, tdef.End, tdef.Timezone}
	spansCache.Lock()
	spans, ok := spansCache.m[key]
	spansCache.Unlock()
	if ok {
		return spans
	}
	_, begins, ok := firstWindow(tdef)
	if !ok {
		return nil
	}
	for _, m := range members {
		since := time.Unix(m.Since, 0)
		if since.Before(begins) {
			since = begins // 0, or before the start: from the start
		}
		first, ok := lastStarted(tdef, since)
		if !ok {
			continue
		}
		last, ok := lastStarted(tdef, stopAt(stops, since).Add(-time.Nanosecond))
		if !ok || backends.CompareDataID(last, first) < 0 {
			continue // no window of it reads nothing
		}
		spans = append(spans, memberSpan{m.Value, first, last})
	}
	spansCache.Lock()
	if spansCache.m == nil || len(spansCache.m) >= 64 {
		spansCache.m = map[spansKey][]memberSpan{}
	}
	spansCache.m[key] = spans
	spansCache.Unlock()
	return spans
}

// nextMaybeEmpty is, for a job whose tuples may read nothing
// (mayReadNothing) writing def, a date (or another time kind) × one
// DYNAMIC dimension, the first tuple after id ("": from the start) that
// may: a value's, from the window holding its since to the last that
// ends by stopAt. A sweep of such a job steps through those
// alone (chainMaybeEmpty), not every tuple between (a value added with a
// backfill of years, or such a job declared on years of history, would
// walk them all). ok is
// false when none is left; shaped tells whether def has that shape (other
// shapes walk every tuple).
func nextMaybeEmpty(cat *backends.Catalog, job backends.Job, def partition.Def, id string) (next string, ok, shaped bool) {
	if def.Kind.IsTime() {
		return nextBeforeStart(cat, job, def, id)
	}
	if def.Kind != partition.Dimensional || len(def.Dimensions) != 2 || !def.Dimensions[0].Kind.IsTime() || def.Dimensions[1].Kind != partition.Dynamic {
		return "", false, false
	}
	tdef := def.Dimensions[0].Def
	stops := emptyStops(cat, job)
	at, after := "", ""
	if id != "" {
		values, ok := def.SplitDataID(id)
		if !ok {
			return "", false, true
		}
		at, after = values[0], values[1]
	}
	nextAt, hasNext := "", false
	if at != "" {
		nextAt, hasNext = tdef.Next(at)
	}
	for _, m := range memberSpans(tdef, def.Dimensions[1].Members, stops) {
		t := m.first
		if at != "" && backends.CompareDataID(t, at) <= 0 {
			// At id's window, a value after id's; after it, the next window.
			t = at
			if backends.CompareDataID(m.value, after) <= 0 {
				if t = nextAt; !hasNext {
					continue
				}
			}
		}
		if backends.CompareDataID(t, m.last) > 0 {
			continue
		}
		if tuple := t + "|" + m.value; next == "" || backends.CompareDataID(tuple, next) < 0 {
			next = tuple
		}
	}
	return next, next != "", true
}

// nextBeforeStart is nextMaybeEmpty of a one-dimensional output of a
// time kind: the output dataid after id ("": its first) whose window ends
// before every window entry reads what its input has from its start
// (stopAt), so that it may read nothing.
func nextBeforeStart(cat *backends.Catalog, job backends.Job, def partition.Def, id string) (string, bool, bool) {
	first, begins, ok := firstWindow(def)
	if !ok {
		return "", false, true
	}
	last, ok := lastStarted(def, stopAt(emptyStops(cat, job), begins).Add(-time.Nanosecond))
	if !ok {
		return "", false, true
	}
	next := first
	if id != "" {
		if next, ok = def.Next(id); !ok {
			return "", false, true
		}
		if backends.CompareDataID(next, first) < 0 {
			next = first
		}
	}
	if backends.CompareDataID(next, last) > 0 {
		return "", false, true
	}
	return next, true, true
}

// chainMaybeEmpty queues, after candidate c of a job whose tuples may read
// nothing was taken (claimed or not), the next tuple that may (a plain
// candidate): the tuples reading nothing are queued one after another, a
// chain started by an add of values or the job's declaration
// (valueCandidates, frontierSeed), so that each is looked at once however
// many tuples lie between them. It tells whether it queued one. Only a
// chain's candidate goes on (chainMark), or one taken with such a twin.
func chainMaybeEmpty(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, c backends.Candidate, twins []backends.Candidate) (bool, error) {
	link := func(c backends.Candidate) bool { return !c.Frontier && !c.Resubmit && c.NotBefore.Equal(chainMark) }
	if !link(c) && !slices.ContainsFunc(twins, link) || !readsNothingFirst(cat, job) {
		return false, nil // a twin taken in its place goes on for it
	}
	def := outputDef(cat, job)
	if def == nil {
		return false, nil
	}
	next, ok, _ := nextMaybeEmpty(cat, job, *def, c.DataID)
	if !ok {
		return false, nil
	}
	return true, tx.AddCandidate(ctx, chainLink(job.ID, next))
}

// timeStart is the start of def's time axis ("" without one).
func timeStart(def *partition.Def) string {
	switch {
	case def == nil:
		return ""
	case def.Kind.IsTime():
		return def.Start
	case def.Windowed() && def.Dimensions[0].Kind.IsTime():
		return def.Dimensions[0].Start
	}
	return ""
}

// readsNothingChains are the first candidates of the chains
// (chainMaybeEmpty) of the jobs reading dataset whose first outputs may
// read nothing under cat, where the dataset's start has just moved later:
// more of them may read nothing.
func readsNothingChains(cat *backends.Catalog, dataset string) []backends.Candidate {
	var out []backends.Candidate
	for _, id := range cat.Consumers(dataset) {
		job := cat.Jobs.Get(id)
		def := outputDef(cat, job)
		if def == nil || !readsNothingFirst(cat, job) {
			continue
		}
		if next, ok, shaped := nextMaybeEmpty(cat, job, *def, ""); shaped && ok {
			out = append(out, chainLink(job.ID, next))
		}
	}
	return out
}

// chainMark is the NotBefore of a chain's candidates (chainMaybeEmpty): an
// instant long past, so that they are due at once as any other, which
// tells them from the candidates other changes queue at the same tuples
// (those start no chain: two chains over the same tuples would each go
// on, a candidate each per tuple).
var chainMark = time.UnixMicro(1).UTC()

// chainLink is a chain's candidate at id.
func chainLink(job, id string) backends.Candidate {
	return backends.Candidate{Job: job, DataID: id, NotBefore: chainMark}
}

// longestWindow is the longest window of a time kind (a day of 25 hours,
// a month of 31 days, across a change of clocks).
func longestWindow(k partition.Kind) time.Duration {
	switch k {
	case partition.Hourly:
		return time.Hour
	case partition.Daily:
		return 25 * time.Hour
	case partition.Weekly:
		return 7*24*time.Hour + time.Hour
	case partition.Monthly:
		return 31*24*time.Hour + time.Hour
	}
	return 0
}

// sweepPage and sweepPages bound what one step of a frontier reads ahead
// of it: pages of sweepPage output rows, at most sweepPages of them.
const (
	sweepPage  = 128
	sweepPages = 4
)

// sweepAhead is how many outputs that may be claimable a sweep queues at
// each step, at most (advanceSweep).
const sweepAhead = 16

// anchor tells whether a sweep's step ends at output id, with the sweep
// placed there: about one output in sweepAhead, chosen by the dataid
// alone, so that two sweeps of a job that walk the same outputs from
// different places land on the same ones and merge there
// (Tx.DropCandidate), as they would stepping one output at a time; a
// sweep reads ahead only from an anchor (advanceSweep).
func anchor(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%sweepAhead == 0
}

// nextOpen is where a frontier of job at id over def goes next: the next
// expected dataid, up to last when last is set. With skip (the chunk at id
// had a row, or a sweep could not claim it: the frontier walks a stretch
// of chunks the job has produced or cannot produce yet), it reads the rows
// ahead as a hint (Tx.PeekRows) and returns the first want chunks whose
// status (NONE without a row) match accepts and whose chunks of the
// inputs ready are READY, up to the first anchor among them when want is
// more than one, or, when none is among the rows read, the last one read,
// to go on from there at the next step. Nothing when def ends first.
func (e *engine) nextOpen(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, def partition.Def, id string, skip bool, last string, ready []string, want int, match func(backends.Status) bool) ([]string, error) {
	next, ok := def.Next(id)
	if !ok || (last != "" && backends.CompareDataID(next, last) > 0) {
		return nil, nil
	}
	if !skip {
		return []string{next}, nil
	}
	ids, err := def.Range(next, last)
	if err != nil {
		return nil, err
	}
	per := 1 + len(ready) // keys per dataid: the output row, then the inputs'
	page := make([]string, 0, sweepPage)
	keys := make([]backends.RowKey, 0, sweepPage*per)
	size := min(sweepPage, 2*want) // the first page: the common case is a run of free chunks
	var found []string
	done := false // found holds want chunks, or ends at an anchor
	pages := 0
	flush := func() error {
		rows, err := tx.PeekRows(ctx, keys)
		if err != nil {
			return err
		}
		for i := range page {
			at := rows[i*per : (i+1)*per]
			if match(backends.StatusOf(at[0])) && !slices.ContainsFunc(at[1:], func(r *backends.StatusRow) bool { return backends.StatusOf(r) != backends.StatusReady }) {
				if found = append(found, page[i]); len(found) == want || (want > 1 && anchor(page[i])) {
					done = true
					break
				}
			}
		}
		pages++
		return nil
	}
	for id := range ids {
		page = append(page, id)
		keys = append(keys, outputKey(cat, job, id))
		for _, in := range ready {
			keys = append(keys, chunkOutputKey(cat, in, id))
		}
		if len(page) < size {
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		size = sweepPage
		switch {
		case done:
			return found, nil
		case pages == sweepPages && len(found) == 0:
			return []string{page[len(page)-1]}, nil
		case pages == sweepPages:
			return found, nil
		}
		page, keys = page[:0], keys[:0]
	}
	if len(page) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// frontierSeed is the frontier of job under cat, when it is scheduled
// there: at the first expected dataid of its output that has no OUTPUT
// row of the job. The catalog change that makes the job scheduled stores
// it in its own transaction (PutJob, PutDataset): a job is never stored
// scheduled without a frontier. The rows are read before that
// transaction; a chunk claimed meanwhile only makes the frontier walk one
// step on.
func (e *engine) frontierSeed(ctx context.Context, cat *backends.Catalog, job backends.Job) (*backends.Candidate, error) {
	def := scheduleDef(cat, job)
	if def == nil {
		// A job whose first windows (or a value's first tuples) may read
		// nothing, declared on an output that has them already: a chain
		// of candidates goes through them (chainMaybeEmpty), or, of a
		// shape without one, a sweep looks for them (sweepHorizon), as
		// an add of values starts one.
		if out := outputDef(cat, job); out != nil && readsNothingFirst(cat, job) && (out.Kind == partition.Dimensional || out.Kind.IsTime()) {
			if id, ok, shaped := nextMaybeEmpty(cat, job, *out, ""); shaped {
				if !ok {
					return nil, nil
				}
				// The first of a chain (chainMaybeEmpty).
				c := chainLink(job.ID, id)
				return &c, nil
			}
			if id, ok := out.First(); ok {
				return &backends.Candidate{Job: job.ID, DataID: id, Frontier: true}, nil
			}
		}
		return nil, nil
	}
	id, ok, err := e.firstGap(ctx, cat, job, def)
	if err != nil || !ok {
		return nil, err
	}
	c := frontierAt(job, def, id)
	return &c, nil
}

// seedFrontier adds the frontier of job under cat in a transaction of its
// own: for a scheduled job stored without one by an earlier version.
func (e *engine) seedFrontier(ctx context.Context, cat *backends.Catalog, job backends.Job) error {
	c, err := e.frontierSeed(ctx, cat, job)
	if err != nil || c == nil {
		return err
	}
	return e.b.Update(ctx, func(tx backends.Tx) error { return tx.AddCandidate(ctx, *c) })
}

// firstGap finds the first expected dataid of def with no OUTPUT row of
// job, paging through the job's rows from the definition's start.
func (e *engine) firstGap(ctx context.Context, cat *backends.Catalog, job backends.Job, def *partition.Def) (string, bool, error) {
	ids, err := def.Range("", "")
	if err != nil {
		return "", false, err
	}
	next, stop := iter.Pull(ids)
	defer stop()
	want, ok := next()
	if !ok {
		return "", false, nil
	}
	f := backends.ChunkFilter{Dataset: job.Output, Job: cat.RowJob(job), Role: backends.RoleOutput, From: want, First: backends.MaxPageSize}
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return "", false, err
		}
		for _, r := range page.Rows {
			switch c := backends.CompareDataID(r.DataID, want); {
			case c > 0:
				return want, true, nil
			case c == 0:
				if want, ok = next(); !ok {
					return "", false, nil
				}
			}
		}
		if !page.HasNextPage || len(page.Cursors) == 0 {
			return want, true, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

// sweptKind tells whether a mapping's reverse is open-ended (LATEST, ALL):
// a chunk of its input becoming READY starts sweeps over the outputs
// instead of queueing them.
func sweptKind(k partition.MappingKind) bool {
	return k == partition.Latest || k == partition.All
}

// sweeps tells whether job reads an input through LATEST or ALL: a chunk
// of it becoming READY starts a sweep over the job's outputs.
func sweeps(job backends.Job) bool {
	for _, m := range job.InputMappings {
		if sweptKind(m.Kind) {
			return true
		}
	}
	return false
}

// dimensional tells whether job writes a dataset with dimensions or reads
// one across dimensions.
func dimensional(cat *backends.Catalog, job backends.Job) bool {
	if cat.DefOf(job.Output).Kind == partition.Dimensional {
		return true
	}
	return slices.ContainsFunc(job.Inputs, func(in string) bool {
		k := job.Mapping(in).Kind
		return k == partition.AcrossDimensions || k == partition.ByDimension
	})
}

// sweepStart is where the sweep over job's outputs starts when chunk inID
// of input in, read through LATEST or ALL, becomes READY: the first output
// dataid of the mapping's reverse span (the outputs after the chunk for
// LATEST, every output for ALL) whose window has started at now. ok is
// false when there is none, or when the output has no partition
// definition to walk.
func sweepStart(cat *backends.Catalog, job backends.Job, in, inID string, now time.Time) (string, bool, error) {
	m := job.Mapping(in)
	out := cat.DefOf(job.Output)
	span, err := m.OutputSpan(out, cat.DefOf(in), inID)
	if err != nil {
		return "", false, mappingError(job, in, inID, err)
	}
	if span.Empty || out.IsZero() {
		return "", false, nil
	}
	last, ok := lastStarted(out, now)
	if !ok {
		return "", false, nil
	}
	if span.To != "" && backends.CompareDataID(span.To, last) < 0 {
		last = span.To
	}
	if span.From != "" && backends.CompareDataID(span.From, last) > 0 {
		return "", false, nil
	}
	ids, err := out.Range(span.From, last)
	if err != nil {
		return "", false, mappingError(job, in, inID, err)
	}
	for id := range ids {
		return id, true, nil
	}
	return "", false, nil
}

// firstWindow is d's first expected dataid and the start of its window.
func firstWindow(d partition.Def) (string, time.Time, bool) {
	first, ok := d.First()
	if !ok {
		return "", time.Time{}, false
	}
	begins, _, err := d.Window(first)
	return first, begins, err == nil
}

// lastStarted is the last dataid d expects whose window has started at now
// (every expected dataid of a definition without windows).
func lastStarted(d partition.Def, now time.Time) (string, bool) {
	if d.Kind == partition.Dimensional && d.Windowed() {
		// The last tuple of the time dimension's last window started.
		head, ok := lastStarted(d.Dimensions[0].Def, now)
		if !ok {
			return "", false
		}
		seq, err := d.RangeDown("", head)
		if err != nil {
			return "", false
		}
		for id := range seq {
			return id, true
		}
		return "", false
	}
	if !d.Kind.IsTime() {
		return d.DueBefore(now)
	}
	d.Lag = 0
	last, ok := d.DueBefore(now)
	if !ok {
		if d.Contains(d.Start) {
			if start, _, err := d.Window(d.Start); err == nil && !now.Before(start) {
				return d.Start, true
			}
		}
		return "", false
	}
	if next, ok := d.Next(last); ok {
		return next, true
	}
	return last, true
}

// addSweep starts the sweeps over job's outputs that chunk (dataset,
// dataid), read through LATEST or ALL, may have made claimable. A sweep is
// a frontier candidate (Candidate.Frontier): two of a kind that meet at
// one output merge, and a scheduled job's sweep merges into its
// schedule's frontier.
func addSweep(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataset, dataid string, now time.Time) error {
	id, ok, err := sweepStart(cat, job, dataset, dataid, now)
	if err != nil || !ok {
		return err
	}
	def := outputDef(cat, job)
	// Two sweeps from there: one for the RESUBMIT outputs, which come
	// first (SPEC §3 findNext), and one for the others.
	rs := frontierAt(job, def, id)
	rs.Resubmit = true
	if err := tx.AddCandidate(ctx, rs); err != nil {
		return err
	}
	return tx.AddCandidate(ctx, frontierAt(job, def, id))
}
