package resolvers

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/resolvers/model"
)

// partitionRuns is a span as the API answers it.
func partitionRuns(s backends.PartitionSpan) model.PartitionRuns {
	out := model.PartitionRuns{Dataset: s.Dataset, From: nullIfEmpty(s.From), To: nullIfEmpty(s.To), Count: s.Count,
		Next: nullIfEmpty(s.Next), ChangesAt: timeOrNull(s.ChangesAt), Runs: s.Runs, Columns: s.Columns}
	if s.Kind != "" && s.Kind != partition.Dimensional {
		out.Kind = &s.Kind
	}
	if out.Runs == nil {
		out.Runs = []backends.PartitionRun{}
	}
	if out.Columns == nil {
		out.Columns = []backends.PartitionColumnRun{}
	}
	return out
}

// selects reports whether the field being resolved selects the subfield
// name.
func selects(ctx context.Context, name string) bool {
	return slices.ContainsFunc(graphql.CollectFieldsCtx(ctx, nil), func(f graphql.CollectedField) bool { return f.Name == name })
}

// fetchLatestReady reads the newest READY dataid of every dataset asked
// for in a response in one store call.
func (r *Resolver) fetchLatestReady(ctx context.Context, datasets []string) ([]string, []error) {
	ids, err := r.store.LatestReady(ctx, datasets)
	if err != nil {
		return nil, []error{err}
	}
	return ids, nil
}
