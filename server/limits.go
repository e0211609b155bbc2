package server

import (
	"context"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

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

// afterMutations calls changed after each root field of a mutation.
func afterMutations(changed func()) graphql.RootFieldMiddleware {
	return func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
		m := next(ctx)
		if op := graphql.GetOperationContext(ctx); op.Operation != nil && op.Operation.Operation == ast.Mutation {
			changed()
		}
		return m
	}
}
