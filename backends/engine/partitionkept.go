package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Missing and late counts from the counts kept with the rows.
//
// A time definition's expected dataids up to a due one are counted by
// arithmetic (partition.Def.Count), and its producer's OUTPUT rows by
// status are kept by every store as the rows change (StatusCounter). When
// every row of the dataset is an expected dataid, the missing count is the
// expected ones up to the last due less the rows up to it, and the late
// count the expected ones up to the last late less the READY rows up to
// it: what lies after is a short read of the rows not due yet. The whole
// history is counted, however long, in the time of that read.
//
// Every row is an expected dataid when the expected set never lost a
// dataid since the dataset was created: a row is only ever written for a
// dataid the definition of the moment expects (publishes, claims, holds
// and each batch of a range check it in their transaction), and catalog
// changes record every definition since the creation (rowsConform). A
// dataset whose set shrank, changed kind or zone, or whose history is not
// recorded (made before catalog changes were) is counted by reading its
// rows, as before; so is one made before holds were checked (an earlier
// version's hold wrote a row at any dataid) while it has HOLD or RESUBMIT
// chunks (holdsChecked).

// maxKeptTail bounds the rows after the last due dataid (published ahead)
// that a kept count reads; with more, the dataset is counted by its rows.
const maxKeptTail = 4 * runWindow

// maxKeptExpected bounds the expected dataids a kept count answers for: a
// count is a GraphQL Int (32 bits). An INTEGER definition may expect up
// to 2^64 dataids; beyond this bound its rows are read, over the last
// MaxPartitionCount of them, and the count says truncated.
const maxKeptExpected = math.MaxInt32

// maxConformChanges bounds the catalog changes rowsConform looks at.
const maxConformChanges = 2000

// conformKey is what rowsConform's answer for a dataset holds for: its
// definition's expected set as of its last change.
type conformKey struct {
	kind             partition.Kind
	start, end, zone string
	dims             string // a multi-dimensional definition's dimensions (JSON)
	updated          int64
	version          int64 // rowsConform's: the catalog version (0 elsewhere)
}

func conformKeyOf(def partition.Def, updated time.Time) conformKey {
	var dims string
	if len(def.Dimensions) > 0 {
		// The values of DYNAMIC dimensions by their number and the
		// number removed (an add or a remove changes one or the other,
		// within one tick of the clock too), not whole.
		d := withoutMembers(backends.Dataset{Partitions: &def}).(backends.Dataset)
		b, _ := json.Marshal(d.Partitions.Dimensions)
		dims = string(b)
		for _, dim := range def.Dimensions {
			if dim.Kind == partition.Dynamic {
				dims += "|" + strconv.Itoa(len(dim.Members)) + "/" + strconv.Itoa(len(dim.Removed))
			}
		}
	}
	return conformKey{kind: def.Kind, start: def.Start, end: def.End, zone: def.Timezone, dims: dims, updated: updated.UnixNano()}
}

type conformAnswer struct {
	key conformKey
	ok  bool
	// newest is the cursor of the newest change the answer read: a later
	// answer reads only the changes after it (definitionsWithin), when
	// def, the definition the answer is for, expects a subset of its
	// definition's dataids (a change may have committed between the
	// catalog read and the changes': newest is then that change's, and
	// the definitions before it were checked against def, not the later
	// one).
	newest string
	def    partition.Def
}

// keptSource is the dataset counted and the catalog version it was read
// at.
type keptSource struct {
	ds      backends.Dataset
	version int64
}

// settledMemo is where findOldest's forward walk may start for a dataset:
// every expected dataid before at had a row not RUNNING when it was last
// counted, and such a row is never deleted (only a release deletes a row,
// a RUNNING one that had none before), so none of them is missing again
// while the catalog stays at the version (a deleteDataset changes it).
type settledMemo struct {
	key conformKey
	ver int64
	at  string
}

// countKept counts c's missing and late dataids from the kept counts; ok
// is false when it cannot (see above) and the caller reads the rows.
func (e *engine) countKept(ctx context.Context, def partition.Def, producer string, src keptSource, c backends.PartitionCount, lastDue, lastLate string) (backends.PartitionCount, bool, error) {
	ds := src.ds
	sc, ok := e.b.(backends.StatusCounter)
	if !ok || !counted(def) {
		return c, false, nil
	}
	if ok, err := e.rowsConform(ctx, c.Dataset, def, ds.UpdatedAt, src.version); err != nil || !ok {
		return c, false, err
	}
	if def.Kind == partition.Integer && def.End == "" {
		// Expected up to the highest dataid seen.
		high, ok, err := e.highestRow(ctx, sc, def, c.Dataset, producer)
		if err != nil || !ok || high == "" {
			return c, ok, err
		}
		lastDue = high
	}
	if lastLate != "" && backends.CompareDataID(lastLate, lastDue) > 0 {
		lastLate = lastDue // a dataid is late only once due
	}
	tailFrom := lastDue
	if lastLate != "" {
		tailFrom = lastLate
	}
	ids, sts, byStatus, ok, err := e.keptReads(ctx, sc, def, c.Dataset, producer, tailFrom)
	if err != nil || !ok {
		return c, false, err
	}
	if byStatus[backends.StatusHold]+byStatus[backends.StatusResubmit] > 0 {
		if ok, err := e.holdsChecked(ctx, ds); err != nil || !ok {
			return c, false, err
		}
	}
	total := rowsIn(byStatus)
	rows := total // all of them, for bisectMissing's check
	// The rows up to the last due dataid, and up to the last late one:
	// all of them and the READY ones.
	ready, rowsLate := byStatus[backends.StatusReady], total
	for i, id := range ids {
		if backends.CompareDataID(id, lastDue) > 0 {
			total--
		}
		if lastLate != "" && backends.CompareDataID(id, lastLate) > 0 {
			if rowsLate--; sts[i] == backends.StatusReady {
				ready--
			}
		}
	}
	due, err := def.Count("", lastDue)
	if err != nil || due > maxKeptExpected {
		// An INTEGER span beyond what a count answers: its rows are read,
		// over its last MaxPartitionCount dataids (truncated).
		return c, false, nil
	}
	// A row written before the last due one while the counts were read
	// is counted or not, as if the count came just before or after it.
	c.Missing = int(max(0, due-int64(total)))
	missingLate := 0 // missing and late
	if lastLate != "" {
		lateDue, err := def.Count("", lastLate)
		if err != nil {
			return c, false, nil
		}
		c.Late = int(max(0, lateDue-int64(ready)))
		missingLate = int(max(0, lateDue-int64(rowsLate)))
	}
	key := conformKeyOf(def, ds.UpdatedAt)
	if err := e.findOldest(ctx, sc, def, producer, &c, lastDue, lastLate, missingLate, rows, key, src.version); err != nil {
		return c, false, err
	}
	return c, true, nil
}

// keptReads reads the rows from tailFrom on, then the kept counts, then
// those rows again: the counts hold the rows read when both reads agree
// (rows ahead only come, and a range brings many at once). It tries
// keptTries times; ok is false when they never agreed, or when there are
// more than maxKeptTail rows ahead.
func (e *engine) keptReads(ctx context.Context, sc backends.StatusCounter, def partition.Def, dataset, producer, tailFrom string) (ids []string, sts []backends.Status, byStatus map[backends.Status]int, ok bool, err error) {
	last, _ := def.Last()
	ids, sts, full, err := e.boundedStatuses(ctx, dataset, producer, tailFrom, last, maxKeptTail)
	for range keptTries {
		if err != nil || !full {
			return nil, nil, nil, false, err
		}
		if byStatus, err = sc.CountStatuses(ctx, dataset, producer); err != nil {
			return nil, nil, nil, false, err
		}
		again, againSts, againFull, err2 := e.boundedStatuses(ctx, dataset, producer, tailFrom, last, maxKeptTail)
		if err2 == nil && againFull && slices.Equal(ids, again) && slices.Equal(sts, againSts) {
			return ids, sts, byStatus, true, nil
		}
		ids, sts, full, err = again, againSts, againFull, err2
	}
	return nil, nil, nil, false, err
}

// keptTries bounds keptReads' attempts.
const keptTries = 3

// holdsChecked tells whether every hold of ds was checked against its
// definition: ds was made since the store's servers refuse holds at
// dataids a definition does not expect (backends.HoldsMarker). Before, a
// hold made a row at any dataid, which keeps the status HOLD, or RESUBMIT
// once resubmitted (nothing claims or publishes it).
func (e *engine) holdsChecked(ctx context.Context, ds backends.Dataset) (bool, error) {
	m, ok := e.b.(backends.HoldsMarker)
	if !ok {
		return false, nil
	}
	since, err := m.HoldsCheckedSince(ctx)
	// Unknown (the store did not answer): the rows are read.
	return err == nil && !ds.CreatedAt.Before(since), nil
}

// boundedStatuses reads the dataids and statuses of producer's OUTPUT rows
// on dataset in [from, to]; full is false when there are more than limit.
func (e *engine) boundedStatuses(ctx context.Context, dataset, producer, from, to string, limit int) (ids []string, sts []backends.Status, full bool, err error) {
	if r, ok := e.b.(backends.OutputStatusReader); ok {
		ids, sts, err = r.OutputStatuses(ctx, dataset, producer, from, to, limit+1)
	} else {
		ids, sts, err = e.listOutputStatuses(ctx, dataset, producer, from, to, limit)
	}
	return ids, sts, len(ids) <= limit, err
}

// rowsConform tells whether every OUTPUT row of dataset is a dataid def
// expects: whether every definition the dataset had since its creation
// expected a subset of what def does (same kind and zone, a start no
// earlier, an end no later). The answer is kept until the dataset changes.
//
// The answer is kept by the catalog version too: the values of a DYNAMIC
// dimension may go and come back within one tick of the clock, leaving
// the definition as it was; asked again, it reads only the changes since
// (definitionsWithin).
func (e *engine) rowsConform(ctx context.Context, dataset string, def partition.Def, updated time.Time, version int64) (bool, error) {
	key := conformKeyOf(def, updated)
	key.version = version
	var prev *conformAnswer
	if v, ok := e.conform.Load(dataset); ok {
		a := v.(conformAnswer)
		if a.key == key {
			return a.ok, nil
		}
		if a.ok && a.newest != "" && within(a.def, def) {
			prev = &a
		}
	}
	ok, newest, err := e.definitionsWithin(ctx, dataset, def, prev)
	if err == nil {
		e.conform.Store(dataset, conformAnswer{key, ok, newest, def})
	}
	return ok, err
}

// definitionsWithin reads dataset's catalog changes, newest first, back to
// its creation: true when every definition before a change expected a
// subset of def's dataids; false when one did not, or when the creation is
// not among the first maxConformChanges changes. With prev, an answer
// true for an earlier definition within def, it reads only the changes after the
// newest prev read: the definitions before those expected a subset of
// that earlier one, which each later change's Before was, so a subset of
// def's when those are. newest is the cursor of the newest change read.
func (e *engine) definitionsWithin(ctx context.Context, dataset string, def partition.Def, prev *conformAnswer) (ok bool, newest string, err error) {
	f := backends.ChangeFilter{Dataset: dataset, First: backends.MaxChangesPage}
	for looked := 0; looked < maxConformChanges; {
		page, err := e.b.ListChanges(ctx, f)
		if err != nil {
			return false, "", err
		}
		for _, ch := range page.Changes {
			if newest == "" {
				newest = ch.Cursor
			}
			if prev != nil && ch.Cursor == prev.newest {
				return true, newest, nil
			}
			looked++
			if ch.Kind != backends.ChangeDataset || ch.ID != dataset {
				continue
			}
			switch ch.Op {
			case "addPartitions":
				if def.Kind == partition.Dimensional {
					continue // values of a DYNAMIC dimension added: the set grew
				}
			case "removePartitions":
				return false, newest, nil // the rows of the values removed stay
			}
			if len(ch.Before) == 0 || string(ch.Before) == "null" {
				return true, newest, nil // its creation: nothing before
			}
			var before backends.Dataset
			if err := json.Unmarshal(ch.Before, &before); err != nil || before.Partitions == nil || !within(*before.Partitions, def) {
				return false, newest, nil
			}
		}
		if !page.HasNextPage || len(page.Changes) == 0 {
			return false, newest, nil // made before changes were recorded
		}
		f.After = page.Changes[len(page.Changes)-1].Cursor
	}
	return false, newest, nil
}

// within tells whether every dataid a expects, b expects too (time kinds
// and INTEGER): by the names of their zones, in the binary's time zone
// database (a new release of it that changed a zone's past would not be
// seen).
func within(a, b partition.Def) bool {
	if a.Kind == partition.Dimensional || b.Kind == partition.Dimensional {
		// The same dimensions, the inner ones unchanged, the first
		// within.
		if a.Kind != b.Kind || len(a.Dimensions) != len(b.Dimensions) {
			return false
		}
		for i := range a.Dimensions {
			x, y := a.Dimensions[i], b.Dimensions[i]
			if x.Kind == partition.Dynamic && y.Kind == partition.Dynamic && x.Name == y.Name {
				// A change records the set without its values; the adds
				// and removes between are changes of their own, which
				// definitionsWithin reads (a remove: not within).
				continue
			}
			if x.Name != y.Name || (i > 0 && !reflect.DeepEqual(x.Def.Normalized(), y.Def.Normalized())) {
				return false
			}
		}
		return within(a.Dimensions[0].Def, b.Dimensions[0].Def)
	}
	if a.Kind != b.Kind || a.Timezone != b.Timezone || !(a.Kind.IsTime() || a.Kind == partition.Integer) {
		return false
	}
	if a.Kind == partition.Integer {
		a.Start, b.Start = cmp.Or(a.Start, "0"), cmp.Or(b.Start, "0")
	}
	if backends.CompareDataID(b.Start, a.Start) > 0 {
		return false
	}
	return b.End == "" || (a.End != "" && backends.CompareDataID(a.End, b.End) <= 0)
}

// counted tells whether def's expected dataids are counted by arithmetic
// (partition.Def.Count, Back): the time kinds, INTEGER, and dimensions
// (by rank, SPEC §10).
func counted(def partition.Def) bool {
	return def.Kind.IsTime() || def.Kind == partition.Integer || def.Kind == partition.Dimensional
}

// findOldest sets c's OldestMissing and OldestLate from its counts: it
// reads windows of the rows from the start forwards, where the first
// missing or late dataid is the oldest, and from the last due dataid
// backwards, where the oldest is in the window that brings the count of
// those seen to c's, one window each way in turn. It reads what lies
// nearer either end, all of it at worst. When every late dataid is a
// missing one (missingLate of them: no row up to the last late one is
// other than READY), the oldest late is the oldest missing, and the
// forward walk starts where the last count of the dataset found the first
// row that could be missing again (settledMemo), not at the start.
func (e *engine) findOldest(ctx context.Context, sc backends.StatusCounter, def partition.Def, producer string, c *backends.PartitionCount, lastDue, lastLate string, missingLate, rows int, key conformKey, version int64) error {
	lateFromMissing := c.Late > 0 && c.Late == missingLate
	wantMissing, wantLate := c.Missing > 0, c.Late > 0 && !lateFromMissing
	fwd, bwd := "", lastDue // the next window starts at fwd; ends at bwd
	if v, ok := e.settled.Load(c.Dataset); ok && !wantLate {
		if m := v.(settledMemo); m.key == key && m.ver == version {
			fwd = m.at
		}
	}
	settled, settling := fwd, wantMissing // see settledMemo
	if wantMissing && !wantLate {
		// (The forward walk also looks for the oldest late dataid when
		// it is not a missing one: it then reads from the start.)
		// The window holding the oldest missing dataid, found by
		// counting (where the store counts): the forward walk starts
		// there. A produced dataset's RUNNING chunks it skips could be
		// released and be missing again, so its memo does not move past
		// them; a source's rows are never RUNNING, and none is deleted
		// but by a catalog change, so its memo moves to the first
		// missing one.
		at, ok, err := e.bisectMissing(ctx, sc, def, c.Dataset, producer, fwd, lastDue, c.Missing, rows)
		if err != nil {
			return err
		}
		if ok && at != fwd {
			fwd, settling = at, producer == ""
		}
	}
	var backMissing, backLate int
	var lowestMissing, lowestLate string // lowest seen going backwards
	for wantMissing || wantLate {
		// Forwards: the first missing and the first late dataid.
		ids, sts, err := e.window(ctx, def, c.Dataset, producer, fwd, lastDue, true)
		if err != nil {
			return err
		}
		if ids == nil {
			break
		}
		to := ids[len(ids)-1]
		for i, id := range ids {
			if settling && (sts[i] == backends.StatusNone || sts[i] == backends.StatusRunning) {
				settled, settling = id, false
			}
			if wantMissing && sts[i] == backends.StatusNone {
				c.OldestMissing, wantMissing = id, false
			}
			if wantLate && lastLate != "" && backends.CompareDataID(id, lastLate) <= 0 && sts[i] != backends.StatusReady {
				c.OldestLate, wantLate = id, false
			}
		}
		if settling {
			settled, _ = def.Next(to)
		}
		if to == lastDue || backends.CompareDataID(to, bwd) >= 0 {
			break // the windows met: every dataid was read
		}
		fwd, _ = def.Next(to)
		if !(wantMissing || wantLate) {
			break
		}
		// Backwards: the window where the counts are reached.
		if ids, sts, err = e.window(ctx, def, c.Dataset, producer, bwd, lastDue, false); err != nil {
			return err
		}
		if ids == nil {
			break
		}
		from := ids[0]
		var m, l []string
		for i, id := range ids {
			if sts[i] == backends.StatusNone {
				m = append(m, id)
			}
			if lastLate != "" && backends.CompareDataID(id, lastLate) <= 0 && sts[i] != backends.StatusReady {
				l = append(l, id)
			}
		}
		if len(m) > 0 {
			lowestMissing = m[0]
			if backMissing += len(m); wantMissing && backMissing >= c.Missing {
				c.OldestMissing, wantMissing = m[0], false
			}
		}
		if len(l) > 0 {
			lowestLate = l[0]
			if backLate += len(l); wantLate && backLate >= c.Late {
				c.OldestLate, wantLate = l[0], false
			}
		}
		if backends.CompareDataID(from, fwd) <= 0 {
			break // the windows met
		}
		bwd, _ = def.Prev(from)
	}
	// Counts read beside a commit can be off by one: what was seen stands.
	if wantMissing {
		c.OldestMissing = lowestMissing
	}
	if wantLate {
		c.OldestLate = lowestLate
	}
	if lateFromMissing && c.OldestMissing != "" && backends.CompareDataID(c.OldestMissing, lastLate) <= 0 {
		// (Published between the counts and the walk, the missing late
		// ones may be gone: what the walk found is then not late.)
		c.OldestLate = c.OldestMissing
	}
	if settled != "" {
		e.settled.Store(c.Dataset, settledMemo{key, version, settled})
	}
	return nil
}

// bisectMissing narrows [from, to] (from "" is the definition's start) to
// at most runWindow expected dataids whose first holds the oldest missing
// one, halving it by counts: the expected dataids of the lower half by
// arithmetic (partition.Def.Count), the producer's rows in it by the
// store's count (backends.OutputCounter), a missing one in it when they
// differ. It costs about one count of the whole span, however long, and
// no row read. First, though, the last window alone is counted: when it
// holds every missing dataid (missing, the count of the span; a feed
// running late), that one count of runWindow rows finds it. ok is false
// when the store cannot count, def is neither of a time kind nor INTEGER,
// or the span is beyond what Count answers; the caller then walks from
// from. The rows must all be expected dataids (countKept
// checks it first), so that a count equal to the expected one means none
// is missing; a row published between two counts at worst makes the walk
// start a little early.
func (e *engine) bisectMissing(ctx context.Context, sc backends.StatusCounter, def partition.Def, dataset, producer, from, to string, missing, rows int) (string, bool, error) {
	oc, ok := e.b.(backends.OutputCounter)
	if !ok || !counted(def) {
		return from, false, nil
	}
	n, err := def.Count(from, to)
	if err != nil {
		return from, false, nil // (the walk reads from from)
	}
	if n <= runWindow {
		return from, true, nil
	}
	if ok, err := e.countsAgree(ctx, sc, oc, def, dataset, producer, rows); err != nil || !ok {
		return from, false, err
	}
	// missingIn counts [a, b]: its expected dataids, and how many of
	// them have no row; ok is false when either count cannot be made.
	missingIn := func(a, b string) (expected, missing int64, ok bool, err error) {
		expected, err = def.Count(a, b)
		if err != nil {
			return 0, 0, false, nil
		}
		rows, ok, err := oc.CountOutputs(ctx, dataset, producer, a, b)
		return expected, expected - rows, ok && err == nil, err
	}
	if last, ok := def.Back(to, runWindow-1); ok {
		_, m, ok, err := missingIn(last, to)
		if !ok {
			return from, false, err
		}
		if m >= int64(missing) {
			return last, true, nil
		}
	}
	lo := from
	for n > runWindow {
		mid, ok := def.Back(to, int(n/2))
		if !ok {
			return from, false, nil
		}
		expected, m, ok, err := missingIn(lo, mid)
		if !ok {
			return from, false, err
		}
		if m > 0 {
			to, n = mid, expected
			continue
		}
		next, ok := def.Next(mid)
		if !ok {
			return from, false, nil
		}
		lo, n = next, n-expected
	}
	return lo, true, nil
}

// countsAgree tells whether the store's count of producer's rows (an
// index on etcd) is no more than the kept counts' rows, or was less than
// agreedFor ago: an index entry left without its row (a replica of an
// earlier version released a claim) would make bisectMissing pass over a
// missing dataid, and such an index is not used. The kept counts are read again once when the index counts
// more (a row written between the two reads).
func (e *engine) countsAgree(ctx context.Context, sc backends.StatusCounter, oc backends.OutputCounter, def partition.Def, dataset, producer string, rows int) (bool, error) {
	key := [2]string{dataset, producer}
	if at, ok := e.agreed.Load(key); ok && time.Since(at.(time.Time)) < agreedFor {
		return true, nil
	}
	agree := func() (bool, error) {
		e.agreed.Store(key, time.Now())
		return true, nil
	}
	last, _ := def.Last()
	n, ok, err := oc.CountOutputs(ctx, dataset, producer, "", last)
	switch {
	case err != nil || !ok:
		return false, err
	case n <= int64(rows):
		return agree()
	}
	byStatus, err := sc.CountStatuses(ctx, dataset, producer)
	if err != nil {
		return false, err
	}
	if n <= int64(rowsIn(byStatus)) {
		return agree()
	}
	return false, nil
}

// rowsIn is the number of rows counted by status in byStatus.
func rowsIn(byStatus map[backends.Status]int) int {
	n := 0
	for _, k := range byStatus {
		n += k
	}
	return n
}

// agreedFor is how long an answer of countsAgree that the counts agree
// holds: an index entry can only be left behind by a replica of an
// earlier version (outputs.go), and a count made within a minute of it
// may then pass over the missing dataid it stands for.
const agreedFor = time.Minute

// highestRow is the highest dataid of producer's OUTPUT rows on an INTEGER
// dataset without end ("" when it has none), found by counts: it is at
// least the start + the number of rows - 1 (a history without gaps: two
// counts find it), and beyond that by steps doubling, then halving. ok is
// false when the store cannot count so (no OutputCounter): the caller
// reads the rows.
func (e *engine) highestRow(ctx context.Context, sc backends.StatusCounter, def partition.Def, dataset, producer string) (string, bool, error) {
	oc, ok := e.b.(backends.OutputCounter)
	if !ok {
		return "", false, nil
	}
	byStatus, err := sc.CountStatuses(ctx, dataset, producer)
	if err != nil {
		return "", false, err
	}
	rows := rowsIn(byStatus)
	if rows == 0 {
		return "", true, nil
	}
	if ok, err := e.countsAgree(ctx, sc, oc, def, dataset, producer, rows); err != nil || !ok {
		return "", false, err
	}
	first, err := strconv.ParseUint(cmp.Or(def.Start, "0"), 10, 64)
	if err != nil {
		return "", false, backends.InvalidArgument("INTEGER start %q: %v", def.Start, err)
	}
	const top = math.MaxUint64
	above := func(v uint64) (bool, error) { // a row at v or after
		n, ok, err := oc.CountOutputs(ctx, dataset, producer, strconv.FormatUint(v, 10), strconv.FormatUint(top, 10))
		if err == nil && !ok {
			err = errNoCount
		}
		return n > 0, err
	}
	lo := first + uint64(rows) - 1 // a row at lo or after (rows only grow)
	if lo < first {
		lo = top
	}
	if ok, err := above(lo); err != nil || !ok {
		// (A row released meanwhile: counted from the rows instead.)
		return "", false, ignoreNoCount(err)
	}
	// Find hi > lo with no row at hi or after, doubling the step.
	hi := uint64(top)
	for step := uint64(1); lo <= top-step; step *= 2 {
		ok, err := above(lo + step)
		if err != nil {
			return "", false, ignoreNoCount(err)
		}
		if !ok {
			hi = lo + step - 1
			break
		}
		lo += step
		if step > top/2 {
			break
		}
	}
	for lo < hi { // a row at lo or after, none after hi
		mid := lo + (hi-lo)/2 + 1
		ok, err := above(mid)
		if err != nil {
			return "", false, ignoreNoCount(err)
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strconv.FormatUint(lo, 10), true, nil
}

var errNoCount = errors.New("the store cannot count rows yet")

func ignoreNoCount(err error) error {
	if errors.Is(err, errNoCount) {
		return nil
	}
	return err
}

// window is up to runWindow expected dataids in ascending order, from at
// onward (forward) or ending at at (backward), never past lastDue, and the
// status of each of them: its OUTPUT row's, StatusNone where it has none.
// ids is nil when there are none.
func (e *engine) window(ctx context.Context, def partition.Def, dataset, producer, at, lastDue string, forward bool) (ids []string, sts []backends.Status, err error) {
	var seq func(func(string) bool)
	if forward {
		seq, err = def.Range(at, lastDue)
	} else {
		seq, err = def.RangeDown("", at)
	}
	if err != nil {
		return nil, nil, backends.InvalidArgument("%v", err)
	}
	for id := range seq {
		ids = append(ids, id)
		if len(ids) == runWindow {
			break
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if !forward {
		slices.Reverse(ids)
	}
	rowIDs, rowSts, err := e.windowStatuses(ctx, dataset, producer, ids[0], ids[len(ids)-1])
	if err != nil {
		return nil, nil, err
	}
	return ids, statusesOf(ids, rowIDs, rowSts), nil
}
