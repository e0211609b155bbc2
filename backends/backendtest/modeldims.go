package backendtest

import (
	"fmt"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The reference model of DYNAMIC dimensions (SPEC §10): jx writes x, hour
// (the schedule's hours) × customer, a DYNAMIC dimension whose values the
// model keeps (m.members: each customer's first expected hour), scheduled
// as jt is; jz reads x one to one into z, whose customers are x's (values
// flow to the outputs reading the dimension by value); jq rolls x's
// customers up into q, hourly, reading for each hour the customers
// expected then. A customer added is expected from the hour holding the
// moment of the add, or from the add's from (a backfill), never before the
// schedule's first hour; removed, it is no longer expected, its rows stay.
// jf reads x into f (hour × customer, fed as z is) by dimension: each
// tuple reads its customer's hour and the hour before; je reads x into e
// (fed as z is) by dimension, each tuple its customer's hour before: at a
// customer's first hour it reads nothing, and is claimable at once (SPEC
// §9: a window before what the input expects reads nothing, and findNext
// offers such a chunk as it does any other); jg totals x into g,
// hourly, by dimension: each hour reads every customer's tuples of the
// hour and the hour before, and is not due while it reads none (SPEC
// §10, an entry naming x's hour).
// The model lists the tuples itself: the hours in order, and within each
// the customers expected then in shortlex order ("k" before "c1").

const (
	modelX = "x"
	modelZ = "z"
	modelQ = "q"
	modelF = "f"
	modelG = "g"
	modelE = "e"
)

var (
	modelXDef = partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "hour", Def: modelScheduleDef},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}}
	modelCustomers = []string{"c1", "c2", "k", "c10"}
	// modelXIDs are every tuple operations use on x and z: the schedule's
	// hours × every customer the model may add.
	modelXIDs = func() []string {
		var out []string
		for _, h := range modelScheduleIDs {
			for _, c := range modelCustomers {
				out = append(out, h+"|"+c)
			}
		}
		slices.SortFunc(out, backends.CompareDataID)
		return out
	}()
	// modelFroms are the from an add gives ("": now).
	modelFroms = []string{"", "", "", "2025-12-31T20", "2025-12-31T22", "2025-12-31T23", "2026-01-01T01"}
)

func dimsDynamicJobs() []*mJob {
	return []*mJob{
		{id: "jx", output: modelX, maxAttempts: 2, lease: 30 * time.Second, def: &modelXDef, ids: []string{}},
		{id: "jz", inputs: []string{modelX}, output: modelZ, maxAttempts: 2, lease: 45 * time.Second, def: &modelXDef, ids: []string{}},
		{id: "jq", inputs: []string{modelX}, output: modelQ, maxAttempts: 2, lease: 30 * time.Second, def: &modelScheduleDef, ids: modelScheduleIDs,
			mapped: map[string]partition.Mapping{modelX: {Kind: partition.AcrossDimensions}}},
		{id: "jf", inputs: []string{modelX}, output: modelF, maxAttempts: 2, lease: 30 * time.Second, def: &modelXDef, ids: []string{},
			mapped: map[string]partition.Mapping{modelX: {Kind: partition.TimeWindow, StartOffset: -1, Dimension: "hour", OutputDimension: "hour"}}},
		{id: "jg", inputs: []string{modelX}, output: modelG, maxAttempts: 2, lease: 30 * time.Second, def: &modelScheduleDef, ids: modelScheduleIDs,
			mapped: map[string]partition.Mapping{modelX: {Kind: partition.TimeWindow, StartOffset: -1, Dimension: "hour"}}},
		{id: "je", inputs: []string{modelX}, output: modelE, maxAttempts: 2, lease: 30 * time.Second, def: &modelXDef, ids: []string{},
			mapped: map[string]partition.Mapping{modelX: {Kind: partition.TimeWindow, StartOffset: -1, EndOffset: -1, Dimension: "hour", OutputDimension: "hour"}}},
	}
}

// modelHasDynamic tells whether a model dataset has a DYNAMIC dimension.
func modelHasDynamic(dataset string) bool {
	return dataset == modelX || dataset == modelZ || dataset == modelF || dataset == modelE
}

// memberTuples lists x's expected tuples under the members.
func (m *model) memberTuples() []string {
	customers := make([]string, 0, len(m.members))
	for c := range m.members {
		customers = append(customers, c)
	}
	slices.SortFunc(customers, backends.CompareDataID)
	out := []string{}
	for _, h := range modelScheduleIDs {
		for _, c := range customers {
			if m.members[c] <= h { // fixed-width hours: byte order is time order
				out = append(out, h+"|"+c)
			}
		}
	}
	return out
}

// firstHour is the first hour a customer added now with from is expected
// at.
func (m *model) firstHour(from string) string {
	h := from
	if h == "" {
		h = m.now.UTC().Format("2006-01-02T15")
	}
	return max(h, modelScheduleIDs[0])
}

// changeMembers is addPartitions (add) or removePartitions of values on
// x's customers (and z's): how many it changed and the values it skipped,
// in shortlex order.
func (m *model) changeMembers(values []string, from string, add bool) (int, []string) {
	changed := 0
	var skipped []string
	seen := map[string]bool{}
	for _, v := range values {
		if seen[v] {
			skipped = append(skipped, v)
			continue
		}
		seen[v] = true
		_, in := m.members[v]
		switch {
		case add == in:
			skipped = append(skipped, v)
		case add:
			m.members[v] = m.firstHour(from)
			changed++
		default:
			delete(m.members, v)
			changed++
		}
	}
	tuples := m.memberTuples()
	m.expected[modelX], m.expected[modelZ], m.expected[modelF], m.expected[modelE] = tuples, tuples, tuples, tuples
	for _, id := range []string{"jx", "jz", "jf", "je"} {
		m.job(id).ids = tuples
	}
	slices.SortStableFunc(skipped, backends.CompareDataID)
	return changed, skipped
}

func (h *harness) applyMembers(o op) {
	h.t.Helper()
	add := o.kind == "addDimension"
	var res backends.RangeResult
	var err error
	if add {
		res, err = h.b.s.AddPartitions(h.b.ctx, modelX, o.values, "customer", o.from)
	} else {
		res, err = h.b.s.RemovePartitions(h.b.ctx, modelX, o.values, "customer")
	}
	h.code(o.String(), "", err)
	changed, skipped := h.m.changeMembers(o.values, o.from, add)
	h.equal(o.String()+": changed", changed, res.Changed)
	h.equal(o.String()+": skipped", fmt.Sprint(skipped), fmt.Sprint(skippedIDs(res)))
	kind := "addPartitions"
	if !add {
		kind = "removePartitions"
	}
	if changed > 0 {
		h.changes += 3 // z's, f's and e's, recorded before x's
	}
	h.expectChange(o.String(), kind, modelX, changed > 0)
}

// applyFedAdd adds a customer to z, whose customers come from x (jz reads
// x by value, under whatever id a redeclare gave it): refused, and nothing
// changes (DimensionsDynamicFedRefused).
func (h *harness) applyFedAdd(o op) {
	h.t.Helper()
	_, err := h.b.s.AddPartitions(h.b.ctx, modelZ, o.values, "customer", "")
	h.code(o.String(), backends.CodeInvalidArgument, err)
	h.expectChange(o.String(), "addPartitions", modelZ, false)
}
