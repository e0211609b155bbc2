package backendtest

import (
	"fmt"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The reference model of dynamic partitions (SPEC §10, first bullet): y's
// definition is DYNAMIC, its values a set the model keeps (m.values, with
// the time each was added, and m.expected["y"], the set in shortlex order,
// which the range operations cover). jy, without inputs, writes y: it may
// claim a value of the set from its adding + lag, and nothing else (a
// dataid not in the set is not due: NOT_DUE with no time it lifts at);
// findNext gives it the lowest such value free for producers.
// addPartitions adds the values not in the set (each listed once; a
// repeated or existing one is skipped), removePartitions removes those in
// it (the others are skipped); neither touches a row. Each call that
// changes the set records one catalog change of y.

const modelDynamic = "y"

var modelDynamicDef = partition.Def{Kind: partition.Dynamic, Lag: 20 * time.Minute}

func dynamicJob() *mJob {
	return &mJob{id: "jy", output: modelDynamic, maxAttempts: 2, lease: 30 * time.Second,
		retryDelay: 15 * time.Second, retryMax: time.Minute, def: &modelDynamicDef, dynamic: true}
}

// inSet tells whether dataid is a value of j's dynamic set, and when it was
// added.
func (m *model) inSet(j *mJob, dataid string) (time.Time, bool) {
	at, ok := m.values[dataid]
	return at, j.dynamic && ok
}

// dynamicBlocker is the NOT_DUE blocker of j (dynamic) at dataid, if any.
func (m *model) dynamicBlocker(j *mJob, dataid string) (time.Time, bool) {
	at, ok := m.inSet(j, dataid)
	if !ok {
		return time.Time{}, true
	}
	due := at.Add(j.def.Lag)
	return due, m.now.Before(due)
}

// changeValues is addPartitions (add) or removePartitions of values on y:
// how many it changed and the values it skipped, in shortlex order.
func (m *model) changeValues(values []string, add bool) (int, []string) {
	changed := 0
	var skipped []string
	seen := map[string]bool{}
	for _, v := range values {
		if seen[v] {
			skipped = append(skipped, v)
			continue
		}
		seen[v] = true
		_, in := m.values[v]
		switch {
		case add == in:
			skipped = append(skipped, v)
		case add:
			m.values[v] = m.now
			changed++
		default:
			delete(m.values, v)
			changed++
		}
	}
	set := make([]string, 0, len(m.values))
	for v := range m.values {
		set = append(set, v)
	}
	slices.SortFunc(set, backends.CompareDataID)
	m.expected[modelDynamic] = set
	slices.SortStableFunc(skipped, backends.CompareDataID)
	return changed, skipped
}

func (h *harness) applyValues(o op) {
	h.t.Helper()
	add := o.kind == "addPartitions"
	var res backends.RangeResult
	var err error
	if add {
		res, err = h.b.s.AddPartitions(h.b.ctx, modelDynamic, o.values, "", "")
	} else {
		res, err = h.b.s.RemovePartitions(h.b.ctx, modelDynamic, o.values, "")
	}
	h.code(o.String(), "", err)
	changed, skipped := h.m.changeValues(o.values, add)
	h.equal(o.String()+": changed", changed, res.Changed)
	h.equal(o.String()+": skipped", fmt.Sprint(skipped), fmt.Sprint(skippedIDs(res)))
	h.expectChange(o.String(), o.kind, modelDynamic, changed > 0)
}
