package server

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// naiveCount counts the selections and aliases of a selection set by
// expanding every fragment where it is spread, as the complexity walk does.
func naiveCount(doc *ast.QueryDocument, set ast.SelectionSet) tally {
	var t tally
	for _, sel := range set {
		t.selections++
		var sub tally
		switch s := sel.(type) {
		case *ast.Field:
			if s.Alias != s.Name {
				t.aliases++
			}
			sub = naiveCount(doc, s.SelectionSet)
		case *ast.InlineFragment:
			sub = naiveCount(doc, s.SelectionSet)
		case *ast.FragmentSpread:
			if f := doc.Fragments.ForName(s.Name); f != nil {
				sub = naiveCount(doc, f.SelectionSet)
			}
		}
		t.selections += sub.selections
		t.aliases += sub.aliases
	}
	return t
}

func newCounter(doc *ast.QueryDocument, cap tally) *selectionCounter {
	c := &selectionCounter{frags: map[string]*ast.FragmentDefinition{}, memo: map[string]tally{}, open: map[string]bool{}, cap: cap}
	for _, f := range doc.Fragments {
		c.frags[f.Name] = f
	}
	return c
}

// TestSelectionCounter: computing each fragment once counts what expanding
// every spread counts.
func TestSelectionCounter(t *testing.T) {
	nested := func(levels int) string {
		var b strings.Builder
		b.WriteString("{ x: jobs { id } ...F0 }")
		for i := range levels {
			fmt.Fprintf(&b, " fragment F%d on Query { a%d: __typename ...F%d ... on Query { ...F%d } }", i, i, i+1, i+1)
		}
		fmt.Fprintf(&b, " fragment F%d on Query { jobs { id y: name } }", levels)
		return b.String()
	}
	noCap := tally{math.MaxInt, math.MaxInt}
	for _, q := range []string{
		`{ jobs { id } datasets { id } }`,
		`{ a: jobs { id b: id } ... on Query { c: datasets { id } } }`,
		`query A { ...F ...F } query B { ...G } fragment F on Query { jobs { id } ...G } fragment G on Query { d: datasets { id } }`,
		nested(1), nested(5), nested(12),
	} {
		doc, err := parser.ParseQuery(&ast.Source{Input: q})
		require.NoError(t, err)
		var want tally
		for _, op := range doc.Operations {
			n := naiveCount(doc, op.SelectionSet)
			want.selections += n.selections
			want.aliases += n.aliases
		}
		require.Equal(t, want, newCounter(doc, noCap).document(doc), q)
	}

	// An unused fragment counts once, in full.
	doc, err := parser.ParseQuery(&ast.Source{Input: `{ jobs { id } } fragment U on Query { a: jobs { id } ...V } fragment V on Query { b: jobs { id } }`})
	require.NoError(t, err)
	require.Equal(t, tally{2 + 5, 2}, newCounter(doc, noCap).document(doc))

	// Counts saturate at the cap instead of growing as 2^levels.
	doc, err = parser.ParseQuery(&ast.Source{Input: nested(200)})
	require.NoError(t, err)
	require.Equal(t, tally{501, 101}, newCounter(doc, tally{501, 101}).document(doc))
}

// TestQueryBoundsSkipCachedQueries: a query in gqlgen's cache passed the
// bounds when it was added (the cache holds only documents that were
// parsed, so that passed them first), and is not parsed again.
func TestQueryBoundsSkipCachedQueries(t *testing.T) {
	long := "{" + strings.Repeat(" __typename", 100) + " }"
	b := queryBounds{maxTokens: 50, maxSelections: 500, maxAliases: 100, cache: graphql.MapCache[*ast.QueryDocument]{}}
	require.ErrorContains(t, b.MutateOperationParameters(context.Background(), &graphql.RawParams{Query: long}), "longer than 50 tokens")
	b.cache.Add(context.Background(), long, &ast.QueryDocument{})
	require.Nil(t, b.MutateOperationParameters(context.Background(), &graphql.RawParams{Query: long}))
}
