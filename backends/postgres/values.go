package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunklock/chunklock/backends"
)

// The values of dynamic sets (backends/dynamic.go), in the table
// partition_values (migration 0017), keyed by (dataset, dimension,
// sortkey). A transaction reads them after its chunk locks (an add or a
// remove locks the chunks of its values, a claim the chunk it claims, so
// the two are ordered), and buffers its writes, applied with its other
// writes at commit.

var _ backends.DynamicTx = (*txn)(nil)

// valueOp is a buffered write of a value: nil at removes it.
type valueOp struct {
	dataset, dimension, value string
	at                        *time.Time
}

func (t *txn) GetPartitionValues(ctx context.Context, dataset, dimension string, ids []string) ([]*backends.PartitionValue, error) {
	out := make([]*backends.PartitionValue, len(ids))
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = backends.SortKey(id)
	}
	t.sendSlotsAhead()
	rows, err := pipe{t}.Query(ctx, getValuesSQL, dataset, dimension, keys)
	if err != nil {
		return nil, mapErr(err, "reading partition values")
	}
	found := map[string]time.Time{}
	for rows.Next() {
		var v string
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			rows.Close()
			return nil, mapErr(err, "reading partition values")
		}
		found[v] = at.UTC()
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "reading partition values")
	}
	for i, id := range ids {
		if at, ok := found[id]; ok {
			out[i] = &backends.PartitionValue{Dataset: dataset, Dimension: dimension, Value: id, AddedAt: at}
		}
	}
	// This transaction's own writes win.
	for _, op := range t.valueOps {
		if op.dataset != dataset || op.dimension != dimension {
			continue
		}
		for i, id := range ids {
			if id == op.value {
				out[i] = nil
				if op.at != nil {
					out[i] = &backends.PartitionValue{Dataset: dataset, Dimension: dimension, Value: id, AddedAt: *op.at}
				}
			}
		}
	}
	return out, nil
}

func (t *txn) PutPartitionValue(_ context.Context, v backends.PartitionValue) error {
	at := v.AddedAt
	t.valueOps = append(t.valueOps, valueOp{dataset: v.Dataset, dimension: v.Dimension, value: v.Value, at: &at})
	return nil
}

func (t *txn) DeletePartitionValue(_ context.Context, dataset, dimension, value string) error {
	t.valueOps = append(t.valueOps, valueOp{dataset: dataset, dimension: dimension, value: value})
	return nil
}

// Statements reading and writing values, each value looked up on its own
// (as GetRows does): without statistics, the planner otherwise reads
// `sortkey = ANY(...)` as a filter over every value of the set. Buffered
// writes are applied by one statement for the adds and one for the
// removes, whatever their number.
const (
	getValuesSQL = `SELECT v.value, v.added_at
		FROM unnest($3::text[]) AS k(sortkey)
		CROSS JOIN LATERAL (
			SELECT value, added_at FROM partition_values p
			WHERE p.dataset = $1 AND p.dimension = $2 AND p.sortkey = k.sortkey
			LIMIT 1
		) AS v`
	putValuesSQL = `INSERT INTO partition_values (dataset, dimension, sortkey, value, added_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
		ON CONFLICT (dataset, dimension, sortkey) DO UPDATE SET value = excluded.value, added_at = excluded.added_at`
	deleteValuesSQL = `DELETE FROM partition_values WHERE ctid = ANY(ARRAY(
		SELECT v.ctid FROM unnest($1::text[], $2::text[], $3::text[]) AS d(dataset, dimension, sortkey)
		CROSS JOIN LATERAL (
			SELECT ctid FROM partition_values p
			WHERE p.dataset = d.dataset AND p.dimension = d.dimension AND p.sortkey = d.sortkey
			LIMIT 1
		) AS v))`
)

// enqueueValues queues the buffered writes of values to be sent with the
// commit, in the order written (the last write of a value wins).
func (t *txn) enqueueValues() {
	if len(t.valueOps) == 0 {
		return
	}
	type key struct{ dataset, dimension, value string }
	last := map[key]valueOp{}
	var order []key
	for _, op := range t.valueOps {
		k := key{op.dataset, op.dimension, op.value}
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = op
	}
	var pd, pdim, psk, pv []string
	var pat []time.Time
	var dd, ddim, dsk []string
	for _, k := range order {
		op := last[k]
		if op.at != nil {
			pd, pdim, psk, pv, pat = append(pd, k.dataset), append(pdim, k.dimension), append(psk, backends.SortKey(k.value)), append(pv, k.value), append(pat, *op.at)
		} else {
			dd, ddim, dsk = append(dd, k.dataset), append(ddim, k.dimension), append(dsk, backends.SortKey(k.value))
		}
	}
	if len(dd) > 0 {
		t.enqueue(deleteValuesSQL, []any{dd, ddim, dsk}, nil)
	}
	if len(pd) > 0 {
		t.enqueue(putValuesSQL, []any{pd, pdim, psk, pv, pat}, nil)
	}
	t.valueOps = nil
}

func (b *Backend) ListPartitionValues(ctx context.Context, dataset, dimension, from, after, to string, limit int) ([]backends.PartitionValue, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	lo, loOp := "", ">="
	if from != "" {
		lo = backends.SortKey(from)
	}
	if after != "" && (from == "" || backends.CompareDataID(after, from) >= 0) {
		lo, loOp = backends.SortKey(after), ">"
	}
	hi := "\U0010FFFF"
	if to != "" {
		hi = backends.SortKey(to)
	}
	rows, err := b.pool.Query(ctx, `SELECT value, added_at FROM partition_values
		WHERE dataset = $1 AND dimension = $2 AND sortkey `+loOp+` $3 AND sortkey <= $4
		ORDER BY sortkey LIMIT $5`, dataset, dimension, lo, hi, limit)
	if err != nil {
		return nil, mapErr(err, "listing partition values")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (backends.PartitionValue, error) {
		v := backends.PartitionValue{Dataset: dataset, Dimension: dimension}
		err := r.Scan(&v.Value, &v.AddedAt)
		v.AddedAt = v.AddedAt.UTC()
		return v, err
	})
	return out, mapErr(err, "listing partition values")
}
