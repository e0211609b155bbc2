package server

import (
	"context"

	gqlcomplexity "github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/graph"
)

// The cost of a request bounds the work it asks of the server. Each field
// costs 1 plus its selections, except the fields whose work grows with
// their arguments or with the data they cover, which cost what bounds that
// work. A unit is meant as about 0.1 ms of server CPU (BENCHMARKS.md,
// "Hostile queries after costing", measured nearer 0.15 ms for pages of
// rows on a loaded machine): a request at the default --max-complexity of
// 1000 is about 100 to 150 ms of work, whatever its aliases. A partition
// summary's first count of a long history costs more than its cost says;
// it is bounded by being shared and paced instead. The costs:
//
//   - a claim (findNext, claim, force): claimCost; any other mutation of
//     one chunk, catalog object or lock: writeCost;
//   - claimNext: claimCost and the selections of one claim, and per
//     further claim asked (max, up to 1,000) claimEachCost and a tenth of
//     them: the claims of one call are of one job, and the cost of
//     Claim.inputs already prices the first as a mapped claim reading a
//     page of 1,000 chunks (a job reading one to one reads a few); a
//     runner's selection (client.ClaimFields) fits 64 claims a request at
//     the default --max-complexity;
//   - completeMany, failMany and heartbeatMany: writeCost, and a unit per
//     manyTokensPerUnit tokens (up to 1,000: a live-claim operation in a
//     batch), their results' selections once;
//   - a range operation (publishRange, resubmitRange, holdRange, up to
//     10,000 chunks): more than half of --max-complexity, so a request
//     holds at most one, and one range is bounded by its own size (see
//     README "Costs and limits"), never by the request timeout;
//   - addPartitions and removePartitions: writeCost and a unit per
//     valuesPerUnit values (up to 10,000: a unit reads a value and writes
//     it with its candidate), at most what a range operation costs;
//   - a page of rows (chunks, events, partitions): its selections once per
//     100 rows asked (pageUnit), twice for partitions (partitionRowFactor:
//     each row's window, due time and lateness are computed, and the page
//     is marshalled an edge at a time: ten aliased pages of 744 hours with
//     three fields each cost 141-148 ms of server CPU, BENCHMARKS.md); locks,
//     claims and resourceLocks count as a page of 1,000 rows;
//   - partitions with a status or late filter: a page may look at up to
//     backends.MaxPartitionScan expected dataids for the rows it keeps, and
//     costs partitionScanCost more; so does chunks with a slice (up to
//     10,000 rows looked at);
//   - Dataset.partitionSummary: summaryCost; a count is shared by the
//     aliases and requests that ask while it runs or after, until the next
//     mutation or --summary-max-age, and counts are made one at a time with
//     a rest between them (see resolvers.Summaries);
//   - Dataset.chunkCounts: countCost; a count reads the counts the store
//     keeps with the rows (a few rows or keys, and on etcd the events not
//     yet sequenced), whatever the dataset's size;
//   - PartitionDefinition.dimensions: up to 4 times its selections, each
//     dimension's values as a STATIC definition's;
//   - PartitionDefinition.values (a STATIC definition's values) and
//     Claim.inputs (a mapped claim's chunks), up to 10,000 each: a page of
//     1,000 rows;
//   - lockGraph: graphCost, and chunkGraphCost with a dataid (every job in
//     the graph reads its rows there, mapped inputs included);
//   - blockers: blockersCost (a mapped job's blockers read every chunk of
//     its mapped sets); chunk: chunkCost;
//   - Dataset.valueSummaries: valueSummariesCost (the kept counts by value,
//     the rows after the last due dataid), valueSummaryCost per value asked
//     (a value behind reads its oldest dataids by key, a window of 1,000 or
//     more), and its selections once per 100 values.
const (
	claimCost          = 50
	writeCost          = 10
	pageUnit           = 100
	partitionRowFactor = 2
	partitionScanCost  = 500
	summaryCost        = 50
	countCost          = 10
	graphCost          = 20
	chunkGraphCost     = 200
	blockersCost       = 100
	chunkCost          = 10
	claimEachCost      = 2
	manyTokensPerUnit  = 2
	valuesPerUnit      = 20
	valueSummariesCost = 100
	valueSummaryCost   = 5
)

// rangeCost is the cost of a range operation under a limit of max: more
// than half of it, so that two never fit in one request.
func rangeCost(max int) int { return max/2 + 1 }

// complexity returns the cost functions of the schema's costly fields
// under a limit of max.
func complexity(max int) graph.ComplexityRoot {
	var c graph.ComplexityRoot
	mutationCosts(&c, max)
	thousand := func(child int) int { return 1 + child*pages(ptr(backends.MaxPageSize)) }
	q := &c.Query
	q.Chunks = func(child int, _, _ *string, _ *backends.Role, _ *backends.Status, _, _ *string, first *int, _ *string, slice []graph.DimensionSliceInput) int {
		n := 1 + child*pages(first)
		if slice != nil {
			n += partitionScanCost // up to maxSliceScan rows looked at for those kept
		}
		return n
	}
	q.Events = func(child int, _, _, _ *string, first *int, _ *string) int { return 1 + child*pages(first) }
	q.CatalogChanges = func(child int, _, _, _ *string, first *int, _ *string) int { return 1 + child*pages(first) }
	q.Partitions = func(child int, _ string, _, _ *string, status *backends.Status, late *bool, first *int, _ *string, _ []graph.DimensionSliceInput) int {
		n := 1 + partitionRowFactor*child*pages(first)
		if status != nil || late != nil {
			n += partitionScanCost
		}
		return n
	}
	q.Locks = func(child int, _, _ *string) int { return thousand(child) }
	q.Claims = func(child int, _ *string) int { return thousand(child) }
	q.ResourceLocks = func(child int, _, _ *string, _ *backends.LockMode) int { return thousand(child) }
	q.LockGraph = func(child int, _, _, dataid *string) int {
		if dataid != nil {
			return chunkGraphCost + child
		}
		return graphCost + child
	}
	q.Blockers = func(child int, _, _ string) int { return blockersCost + child }
	q.Chunk = func(child int, _, _ string) int { return chunkCost + child }
	c.Dataset.PartitionSummary = func(child int) int { return summaryCost + child }
	c.Dataset.ChunkCounts = func(child int) int { return countCost + child }
	// A page of counts by value reads the kept counts by value and, for
	// each value listed that is behind, its oldest dataids by key.
	c.Dataset.ValueSummaries = func(child int, _ string, _ *bool, first *int, _ *string) int {
		n := 20
		if first != nil {
			n = *first
			if n < 0 || n > backends.MaxValueCountPage {
				n = backends.MaxValueCountPage // refused by the resolver, priced as the most it could be
			}
		}
		return valueSummariesCost + n*valueSummaryCost + child*pages(&n)
	}
	c.PartitionDefinition.Values = func(child int) int { return thousand(child) }
	c.PartitionDefinition.Dimensions = func(child int) int { return partition.MaxDimensions * child }
	c.PartitionDimension.Values = func(child int) int { return thousand(child) }
	c.PartitionDimension.Members = func(child int) int { return thousand(child) }
	// A claim's dimension values are its dataid split (at most four): no
	// read, nothing that grows: one unit, whatever is selected of them (the
	// least gqlgen takes).
	c.DatasetAccess.Dimensions = func(int) int { return 1 }
	c.Claim.Inputs = func(child int) int { return thousand(child) }
	dashboardComplexity(&c)
	return c
}

// mutationCosts fills in the costs of the mutations.
func mutationCosts(c *graph.ComplexityRoot, max int) {
	claim := func(child int) int { return claimCost + child }
	write := func(child int) int { return writeCost + child }
	bulk := func(child int) int { return rangeCost(max) + child }
	m := &c.Mutation
	m.FindNext = func(child int, _, _ string) int { return claim(child) }
	m.Claim = func(child int, _, _, _ string) int { return claim(child) }
	m.Force = func(child int, _, _, _ string) int { return claim(child) }
	m.UpsertDataset = func(child int, _ graph.DatasetInput) int { return write(child) }
	m.UpsertJob = func(child int, _ graph.JobInput) int { return write(child) }
	m.UpsertPool = func(child int, _ graph.PoolInput) int { return write(child) }
	m.SetCredential = func(child int, _, _, _ string) int { return write(child) }
	m.Publish = func(child int, _, _ string) int { return write(child) }
	m.Resubmit = func(child int, _, _ string, _ *bool) int { return write(child) }
	m.Hold = func(child int, _, _ string, _ *string) int { return write(child) }
	m.Heartbeat = func(child int, _ string) int { return write(child) }
	m.Complete = func(child int, _ string) int { return write(child) }
	m.Fail = func(child int, _ string, _ *string) int { return write(child) }
	m.Release = func(child int, _ string) int { return write(child) }
	m.ClaimNext = func(child int, _, _ string, n int) int {
		more := clampInt(n, 1, backends.MaxClaimNext) - 1
		return claimCost + child + more*(claimEachCost+(child+9)/10)
	}
	many := func(child, n int) int { return writeCost + (n+manyTokensPerUnit-1)/manyTokensPerUnit + child }
	m.CompleteMany = func(child int, tokens []string) int { return many(child, len(tokens)) }
	m.FailMany = func(child int, items []backends.FailItem) int { return many(child, len(items)) }
	m.HeartbeatMany = func(child int, tokens []string) int { return many(child, len(tokens)) }
	m.LockResource = func(child int, _, _ string, _ backends.LockMode, _ *int) int { return write(child) }
	m.UnlockResource = func(child int, _, _ string) int { return write(child) }
	m.RenewResource = func(child int, _, _ string, _ *int) int { return write(child) }
	m.PublishRange = func(child int, _, _, _ string, _ []graph.DimensionSliceInput) int { return bulk(child) }
	m.ResubmitRange = func(child int, _, _, _ string, _ []graph.DimensionSliceInput, _ *bool) int { return bulk(child) }
	m.HoldRange = func(child int, _, _, _ string, _ []graph.DimensionSliceInput, _ *string) int { return bulk(child) }
	values := func(child, n int) int { return min(write(child)+(n+valuesPerUnit-1)/valuesPerUnit, bulk(child)) }
	m.AddPartitions = func(child int, _ string, ids []string, _, _ *string) int { return values(child, len(ids)) }
	m.RemovePartitions = func(child int, _ string, ids []string, _ *string) int { return values(child, len(ids)) }
	m.PauseJob = func(child int, _ string) int { return write(child) }
	m.ResumeJob = func(child int, _ string) int { return write(child) }
	m.DeletePool = func(child int, _ string) int { return write(child) }
	// A deletion removes every row of a job's reads or of a dataset.
	m.DeleteJob = func(child int, _ string) int { return bulk(child) }
	m.DeleteDataset = func(child int, _ string, _ *bool) int { return bulk(child) }
}

func ptr[T any](v T) *T { return &v }

// clampInt is n within [lo, hi].
func clampInt(n, lo, hi int) int { return min(max(n, lo), hi) }

// pages is how many units of pageUnit rows a page size asks for.
func pages(first *int) int {
	n := backends.DefaultPageSize
	if first != nil && *first > 0 {
		n = min(*first, backends.MaxPageSize)
	}
	return (n + pageUnit - 1) / pageUnit
}

// costLimit refuses an operation that costs more than max, saying what
// costs much and what to do.
type costLimit struct {
	max int
	es  graphql.ExecutableSchema
}

var (
	_ graphql.HandlerExtension        = &costLimit{}
	_ graphql.OperationContextMutator = &costLimit{}
)

func (*costLimit) ExtensionName() string { return "CostLimit" }

func (c *costLimit) Validate(es graphql.ExecutableSchema) error {
	c.es = es
	return nil
}

func (c *costLimit) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	n := gqlcomplexity.Calculate(ctx, c.es, op.Operation, op.Variables)
	if n <= c.max {
		return nil
	}
	err := gqlerror.Errorf("the request costs %d, more than the server's limit of %d (--max-complexity): "+
		"a range operation costs more than half of the limit (one per request), a partitions page with a status or late filter %d, "+
		"a partition summary %d, value summaries %d plus %d a value, a lockGraph at a dataid %d, a claim %d, any other mutation %d, "+
		"and a page of rows its selections once per 100 rows (partitions: twice); split it into several requests",
		n, c.max, partitionScanCost, summaryCost, valueSummariesCost, valueSummaryCost, chunkGraphCost, claimCost, writeCost)
	errcode.Set(err, complexityLimitCode)
	return err
}
