package backendtest

import (
	"maps"
	"reflect"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// The reference model of the range operations: each applies the single
// operation, in shortlex order, to every dataid of [from, to] that the
// dataset expects when it has a partition definition (the model's src2),
// else to every dataid at which it has an OUTPUT row; a refused chunk is
// skipped and changes nothing; a chunk already as asked is unchanged.

// mRange is what a range operation answered.
type mRange struct {
	changed, unchanged int
	skipped            []skip
}

// covered lists, in shortlex order, the dataids of [from, to] a range
// operation on dataset covers: expected ones, or those with an OUTPUT row.
func (m *model) covered(dataset, from, to string) []string {
	var out []string
	exp, defined := m.expected[dataset]
	ids := m.dataids
	if defined {
		ids = exp // in shortlex order, as the model's lists are written
	}
	for _, d := range ids {
		if backends.CompareDataID(d, from) < 0 || backends.CompareDataID(d, to) > 0 {
			continue
		}
		if (defined && slices.Contains(exp, d)) || (!defined && m.rows[m.outKey(dataset, d)] != nil) {
			out = append(out, d)
		}
	}
	return out
}

// rangeArgs refuses a reversed range; every range op checks it first.
func rangeArgs(from, to string) backends.Code {
	if backends.CompareDataID(from, to) > 0 {
		return backends.CodeInvalidArgument
	}
	return ""
}

// publishRange publishes the expected dataids of a source dataset with
// a definition: INVALID_ARGUMENT for any other; a READY chunk is
// unchanged, one on HOLD skipped.
func (m *model) publishRange(dataset, from, to string) (mRange, backends.Code) {
	if c := rangeArgs(from, to); c != "" {
		return mRange{}, c
	}
	if _, defined := m.expected[dataset]; !defined || m.producer(dataset) != "" {
		return mRange{}, backends.CodeInvalidArgument
	}
	var res mRange
	for _, d := range m.covered(dataset, from, to) {
		if m.status(m.outKey(dataset, d)) == ready {
			res.unchanged++
			continue
		}
		if c := m.publish(dataset, d); c != "" {
			res.skipped = append(res.skipped, skip{d, c})
			continue
		}
		res.changed++
	}
	return res, ""
}

// holdRange holds every covered chunk, creating missing ones; one an operator held already (no
// claim ending recorded; every hold of the model has the same reason) is
// unchanged.
func (m *model) holdRange(dataset, from, to string) (mRange, backends.Code) {
	if c := rangeArgs(from, to); c != "" {
		return mRange{}, c
	}
	var res mRange
	for _, d := range m.covered(dataset, from, to) {
		r := m.rows[m.outKey(dataset, d)]
		switch {
		case r != nil && r.status == hold && r.ended == endNone:
			res.unchanged++
		default:
			if c := m.hold(dataset, d); c != "" {
				res.skipped = append(res.skipped, skip{d, c})
				continue
			}
			res.changed++
		}
	}
	return res, ""
}

// resubmitRange resubmits every covered chunk (NOT_FOUND: no row); one already RESUBMIT is
// not set again, but its cascade runs; a chunk is unchanged when nothing
// about it (or downstream of it) changed.
func (m *model) resubmitRange(dataset, from, to string, cascade bool) (mRange, backends.Code) {
	if c := rangeArgs(from, to); c != "" {
		return mRange{}, c
	}
	var res mRange
	for _, d := range m.covered(dataset, from, to) {
		r := m.rows[m.outKey(dataset, d)]
		before := m.clone()
		var code backends.Code
		switch {
		case r == nil || r.status != resubmit:
			_, code = m.resubmit(dataset, d, cascade)
		case cascade:
			if _, bs := m.invalidate(dataset, d); len(bs) > 0 {
				m.rows, code = before, backends.CodeLocked
			}
		}
		switch {
		case code != "":
			res.skipped = append(res.skipped, skip{d, code})
		case maps.EqualFunc(before, m.rows, func(a, b *mRow) bool { return reflect.DeepEqual(a, b) }):
			res.unchanged++
		default:
			res.changed++
		}
	}
	return res, ""
}

// applyRange runs a range operation on the store and on the model and
// compares their answers.
func (h *harness) applyRange(o op) {
	h.t.Helper()
	b, m, ctx := h.b, h.m, h.b.ctx
	var got backends.RangeResult
	var err error
	var want mRange
	var code backends.Code
	switch o.kind {
	case "publishRange":
		got, err = b.s.PublishRange(ctx, o.dataset, o.from, o.to)
		want, code = m.publishRange(o.dataset, o.from, o.to)
	case "holdRange":
		got, err = b.s.HoldRange(ctx, o.dataset, o.from, o.to, "model")
		want, code = m.holdRange(o.dataset, o.from, o.to)
	case "resubmitRange":
		got, err = b.s.ResubmitRange(ctx, o.dataset, o.from, o.to, o.cascade)
		want, code = m.resubmitRange(o.dataset, o.from, o.to, o.cascade)
	}
	h.code(o.kind, code, err)
	if code != "" {
		return
	}
	res := mRange{changed: got.Changed, unchanged: got.Unchanged}
	for _, s := range got.Skipped {
		res.skipped = append(res.skipped, skip{s.DataID, s.Code})
	}
	h.equal(o.kind+" result", want, res)
}
