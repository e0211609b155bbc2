package server

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/chunklock/chunklock/graph"
)

// TestEveryMutationHasAnAccessRule keeps mutationAccess in step with the
// schema: a new mutation must say who may run it.
func TestEveryMutationHasAnAccessRule(t *testing.T) {
	var inSchema []string
	for _, f := range graph.NewExecutableSchema(graph.Config{}).Schema().Mutation.Fields {
		if f.Name[0] != '_' {
			inSchema = append(inSchema, f.Name)
		}
	}
	require.ElementsMatch(t, inSchema, slices.Collect(maps.Keys(mutationAccess)))
}

func TestDepth(t *testing.T) {
	for q, want := range map[string]int{
		`{ jobs { id } }`: 2,
		`{ a: jobs { id } b: datasets { producer { id } } }`:                        3,
		`{ ...F } fragment F on Query { jobs { outputDataset { id } } }`:            3,
		`{ __schema { types { fields { type { ofType { ofType { name } } } } } } }`: 0,
		`{ jobs { ... on Job { inputDatasets { id } } } }`:                          3,
	} {
		doc, err := parseQuery(q)
		require.NoError(t, err, q)
		require.Equal(t, want, depth(doc.Operations[0].SelectionSet), q)
	}
}

func parseQuery(q string) (*ast.QueryDocument, error) {
	doc, errs := gqlparser.LoadQueryWithRules(graph.NewExecutableSchema(graph.Config{}).Schema(), q, nil)
	if errs != nil {
		return nil, errs
	}
	return doc, nil
}
