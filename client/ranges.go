package client

import (
	"context"
	"fmt"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// MaxRangeDataIDs is the most dataids one range call covers; the server
// refuses more (INVALID_ARGUMENT).
const MaxRangeDataIDs = backends.MaxRangeDataIDs

// RangeSkip is a chunk a range operation left as it was: Code is the
// error the single-chunk operation answered (LOCKED, NOT_FOUND).
type RangeSkip struct {
	DataID string `json:"dataid"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// RangeResult is what a range operation did: Changed chunks were written,
// Unchanged ones were already as asked, Skipped ones were refused.
type RangeResult struct {
	Changed   int         `json:"changed"`
	Unchanged int         `json:"unchanged"`
	Skipped   []RangeSkip `json:"skipped"`
}

const rangeFields = `changed unchanged skipped { dataid code reason }`

// PublishRange publishes every expected dataid in [from, to] of a source
// dataset that has a partition definition.
func (c *Client) PublishRange(ctx context.Context, dataset, from, to string) (RangeResult, error) {
	var out struct{ PublishRange RangeResult }
	err := c.Do(ctx, `mutation($ds: String!, $f: String!, $t: String!) { publishRange(dataset: $ds, from: $f, to: $t) { `+rangeFields+` } }`,
		map[string]any{"ds": dataset, "f": from, "t": to}, &out)
	return out.PublishRange, err
}

// ResubmitRange resubmits every chunk in [from, to]: the expected dataids
// of a dataset with a partition definition, else its existing chunks.
func (c *Client) ResubmitRange(ctx context.Context, dataset, from, to string, cascade bool) (RangeResult, error) {
	var out struct{ ResubmitRange RangeResult }
	err := c.Do(ctx, `mutation($ds: String!, $f: String!, $t: String!, $c: Boolean) { resubmitRange(dataset: $ds, from: $f, to: $t, cascade: $c) { `+rangeFields+` } }`,
		map[string]any{"ds": dataset, "f": from, "t": to, "c": cascade}, &out)
	return out.ResubmitRange, err
}

// HoldRange holds every chunk in [from, to], as ResubmitRange chooses them.
func (c *Client) HoldRange(ctx context.Context, dataset, from, to, reason string) (RangeResult, error) {
	var out struct{ HoldRange RangeResult }
	err := c.Do(ctx, `mutation($ds: String!, $f: String!, $t: String!, $r: String) { holdRange(dataset: $ds, from: $f, to: $t, reason: $r) { `+rangeFields+` } }`,
		map[string]any{"ds": dataset, "f": from, "t": to, "r": reason}, &out)
	return out.HoldRange, err
}

// SlicedRange applies a range operation (r.Op: publish, resubmit or hold)
// to the tuples of a slice of a dataset with dimensions in [From, To].
func (c *Client) SlicedRange(ctx context.Context, r backends.RangeRequest) (RangeResult, error) {
	vars := map[string]any{"ds": r.Dataset, "f": r.From, "t": r.To, "s": r.Slice}
	var q string
	switch r.Op {
	case backends.RangePublish:
		q = `mutation($ds: String!, $f: String!, $t: String!, $s: [DimensionSliceInput!]) { r: publishRange(dataset: $ds, from: $f, to: $t, slice: $s) { ` + rangeFields + ` } }`
	case backends.RangeResubmit:
		q = `mutation($ds: String!, $f: String!, $t: String!, $s: [DimensionSliceInput!], $c: Boolean) { r: resubmitRange(dataset: $ds, from: $f, to: $t, slice: $s, cascade: $c) { ` + rangeFields + ` } }`
		vars["c"] = r.Cascade
	case backends.RangeHold:
		q = `mutation($ds: String!, $f: String!, $t: String!, $s: [DimensionSliceInput!], $r: String) { r: holdRange(dataset: $ds, from: $f, to: $t, slice: $s, reason: $r) { ` + rangeFields + ` } }`
		vars["r"] = r.Reason
	default:
		return RangeResult{}, fmt.Errorf("unknown range operation %q", r.Op)
	}
	var out struct{ R RangeResult }
	err := c.Do(ctx, q, vars, &out)
	return out.R, err
}

// DatasetPartitions returns the partition definition of a dataset (nil:
// none), NOT_FOUND for an unknown dataset.
func (c *Client) DatasetPartitions(ctx context.Context, dataset string) (*partition.Def, error) {
	var out struct{ Dataset *Dataset }
	if err := c.doCompat(ctx, `query($id: String!) { dataset(id: $id) { `+datasetFields+` } }`, map[string]any{"id": dataset}, &out); err != nil {
		return nil, err
	}
	if out.Dataset == nil {
		return nil, &Error{Code: backends.CodeNotFound, Message: fmt.Sprintf("dataset %q not found", dataset)}
	}
	return out.Dataset.Backend().Partitions, nil
}
