package backendtest

import (
	"maps"

	"github.com/chunklock/chunklock/backends"
)

// The reference model of the range operations over a dataset without a
// partition definition (the model's datasets have none): each applies the
// single operation to every chunk of [from, to] that has an OUTPUT row, in
// shortlex order; a refused chunk is skipped and changes nothing; a chunk
// already as asked is unchanged.

// mRange is what a range operation answered.
type mRange struct {
	changed, unchanged int
	skipped            []skip
}

// existing lists, in shortlex order, the dataids in [from, to] at which
// dataset has an OUTPUT row.
func (m *model) existing(dataset, from, to string) []string {
	var out []string
	for _, d := range m.dataids {
		if backends.CompareDataID(d, from) >= 0 && backends.CompareDataID(d, to) <= 0 && m.rows[m.outKey(dataset, d)] != nil {
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

// publishRange: the model's datasets have no definition, so no dataid is
// expected and the call is refused.
func (m *model) publishRange() backends.Code {
	return backends.CodeInvalidArgument
}

// holdRange holds every existing chunk; one an operator held already (no
// claim ending recorded; every hold of the model has the same reason) is
// unchanged.
func (m *model) holdRange(dataset, from, to string) (mRange, backends.Code) {
	if c := rangeArgs(from, to); c != "" {
		return mRange{}, c
	}
	var res mRange
	for _, d := range m.existing(dataset, from, to) {
		r := m.rows[m.outKey(dataset, d)]
		switch {
		case r.status == hold && r.ended == endNone:
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

// resubmitRange resubmits every existing chunk; one already RESUBMIT is
// not set again, but its cascade runs; a chunk is unchanged when nothing
// about it (or downstream of it) changed.
func (m *model) resubmitRange(dataset, from, to string, cascade bool) (mRange, backends.Code) {
	if c := rangeArgs(from, to); c != "" {
		return mRange{}, c
	}
	var res mRange
	for _, d := range m.existing(dataset, from, to) {
		r := m.rows[m.outKey(dataset, d)]
		before := m.clone()
		var code backends.Code
		switch {
		case r.status != resubmit:
			_, code = m.resubmit(dataset, d, cascade)
		case cascade:
			if _, bs := m.invalidate(dataset, d); len(bs) > 0 {
				m.rows, code = before, backends.CodeLocked
			}
		}
		switch {
		case code != "":
			res.skipped = append(res.skipped, skip{d, code})
		case maps.EqualFunc(before, m.rows, func(a, b *mRow) bool { return *a == *b }):
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
		code = m.publishRange()
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
