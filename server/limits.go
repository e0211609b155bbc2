package server

import (
	"context"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
)

// Costs of the complexity limit. A field costs 1 plus its selections; a
// mutation that claims (findNext, claim, force) costs claimCost, any other
// mutation writeCost, so that a request cannot batch hundreds of claims
// under aliases. Paged lists cost their selections once per 100 rows asked.
const (
	claimCost = 50
	writeCost = 10
	pageUnit  = 100
)

// complexity returns the cost functions of the schema's expensive fields.
func complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	claim := func(child int) int { return claimCost + child }
	write := func(child int) int { return writeCost + child }
	m := &c.Mutation
	m.FindNext = func(child int, _, _ string) int { return claim(child) }
	m.Claim = func(child int, _, _, _ string) int { return claim(child) }
	m.Force = func(child int, _, _, _ string) int { return claim(child) }
	m.UpsertDataset = func(child int, _ graph.DatasetInput) int { return write(child) }
	m.UpsertJob = func(child int, _ graph.JobInput) int { return write(child) }
	m.SetCredential = func(child int, _, _, _ string) int { return write(child) }
	m.Publish = func(child int, _, _ string) int { return write(child) }
	m.Resubmit = func(child int, _, _ string, _ *bool) int { return write(child) }
	m.Hold = func(child int, _, _ string, _ *string) int { return write(child) }
	m.Heartbeat = func(child int, _ string) int { return write(child) }
	m.Complete = func(child int, _ string) int { return write(child) }
	m.Fail = func(child int, _ string, _ *string) int { return write(child) }
	m.Release = func(child int, _ string) int { return write(child) }
	m.LockResource = func(child int, _, _ string, _ backends.LockMode, _ *int) int { return write(child) }
	m.UnlockResource = func(child int, _, _ string) int { return write(child) }
	m.RenewResource = func(child int, _, _ string, _ *int) int { return write(child) }
	q := &c.Query
	q.Chunks = func(child int, _, _ *string, _ *backends.Role, _ *backends.Status, _, _ *string, first *int, _ *string) int {
		return 1 + child*pages(first)
	}
	q.Events = func(child int, _, _, _ *string, first *int, _ *string) int { return 1 + child*pages(first) }
	q.Locks = func(child int, _, _ *string) int { return 1 + child*backends.MaxPageSize/pageUnit }
	dashboardComplexity(&c)
	return c
}

// pages is how many units of pageUnit rows a page size asks for.
func pages(first *int) int {
	n := backends.DefaultPageSize
	if first != nil && *first > 0 {
		n = min(*first, backends.MaxPageSize)
	}
	return (n + pageUnit - 1) / pageUnit
}

// depthLimitCode marks the depth limit's error, complexityLimitCode the
// complexity limit's; the presenter answers both as INVALID_ARGUMENT.
const (
	depthLimitCode      = "DEPTH_LIMIT_EXCEEDED"
	complexityLimitCode = "COMPLEXITY_LIMIT_EXCEEDED"
)

// Requests refused by a limit are answered like invalid ones: HTTP 422
// (gqlgen answers 200 for the complexity limit by default).
func init() {
	errcode.RegisterErrorType(depthLimitCode, errcode.KindProtocol)
	errcode.RegisterErrorType(complexityLimitCode, errcode.KindProtocol)
}

// depthLimit refuses operations whose selections nest deeper than max
// (fragments count where they are spread). Introspection fields are left to
// the validator's own introspection depth rule, so the playground's schema
// query is never refused.
type depthLimit struct{ max int }

var (
	_ graphql.HandlerExtension        = depthLimit{}
	_ graphql.OperationContextMutator = depthLimit{}
)

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if n := depth(op.Operation.SelectionSet); n > d.max {
		err := gqlerror.Errorf("the operation nests %d levels deep; the limit is %d: ask for less nested data", n, d.max)
		errcode.Set(err, depthLimitCode)
		return err
	}
	return nil
}

// depth returns how deeply a selection set nests. The validator has already
// refused fragment cycles, so the recursion ends.
func depth(set ast.SelectionSet) int {
	deepest := 0
	for _, sel := range set {
		n := 0
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			n = 1 + depth(s.SelectionSet)
		case *ast.InlineFragment:
			n = depth(s.SelectionSet)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				n = depth(s.Definition.SelectionSet)
			}
		}
		deepest = max(deepest, n)
	}
	return deepest
}

// withTimeout bounds queries and mutations (over HTTP or a websocket) by
// the request timeout. Subscriptions live as long as their client.
func (s *Server) withTimeout(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx)
	if s.cfg.RequestTimeout <= 0 || op.Operation == nil || op.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	responses := next(ctx)
	var once sync.Once
	return func(ctx context.Context) *graphql.Response {
		defer once.Do(cancel)
		return responses(ctx)
	}
}
