package server

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
)

// queryBoundsCode marks the errors of the early bounds; the presenter
// answers them as INVALID_ARGUMENT.
const queryBoundsCode = "QUERY_BOUNDS_EXCEEDED"

func init() { errcode.RegisterErrorType(queryBoundsCode, errcode.KindProtocol) }

// queryBounds refuses a query whose size would make gqlgen's later steps
// costly, before any of them runs: validation compares the fields of a
// selection set pairwise (quadratic), and the complexity and depth limits
// and execution expand every fragment where it is spread (exponential in
// how deeply fragments spread fragments). It parses the raw query once
// (linear, and stopped after maxTokens tokens) and counts, in a pass that
// computes each fragment once, the selections (fields, fragment spreads and
// inline fragments) and aliases of every operation, and of every fragment
// no operation spreads, with the fragments they spread expanded, refusing
// more than maxSelections or maxAliases. Fragments that spread themselves
// or share a name, which the validator refuses too, are refused here, as
// they would escape the count.
//
// It runs for every transport (POST, GET, websocket), before gqlgen's
// query cache: the cache only helps a query sent again verbatim, and a
// costly query varies at no cost to its sender. A query the cache holds
// passed these bounds when it was added, so it is not parsed again.
type queryBounds struct {
	maxTokens, maxSelections, maxAliases int
	cache                                graphql.Cache[*ast.QueryDocument]
}

var (
	_ graphql.HandlerExtension          = queryBounds{}
	_ graphql.OperationParameterMutator = queryBounds{}
)

func (queryBounds) ExtensionName() string                   { return "QueryBounds" }
func (queryBounds) Validate(graphql.ExecutableSchema) error { return nil }

func (b queryBounds) MutateOperationParameters(ctx context.Context, raw *graphql.RawParams) *gqlerror.Error {
	if _, ok := b.cache.Get(ctx, raw.Query); ok {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: raw.Query}, b.maxTokens)
	if err != nil {
		var perr *gqlerror.Error
		if errors.As(err, &perr) && strings.HasPrefix(perr.Message, "exceeded token limit") {
			return boundsError("the query is longer than %d tokens (names, punctuation and values), the server's limit (--max-tokens): send a shorter query, with large values as variables", b.maxTokens)
		}
		return nil // gqlgen answers the syntax error
	}
	if name := longName(raw.Query); name != "" {
		return boundsError("the name %s... is longer than %d bytes: no field, argument, type, fragment or variable has such a name", name, maxNameBytes)
	}
	c := selectionCounter{frags: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		memo: map[string]tally{}, open: map[string]bool{}, cap: tally{above(b.maxSelections), above(b.maxAliases)}}
	for _, f := range doc.Fragments {
		if c.frags[f.Name] != nil {
			return boundsError("two fragments are named %s: give each fragment a name of its own", f.Name)
		}
		c.frags[f.Name] = f
	}
	total := c.document(doc)
	switch {
	case c.cycle != "":
		return boundsError("fragment %s spreads itself (through %s): a fragment cannot include itself", c.cycle, c.cyclePath)
	case total.selections > b.maxSelections:
		return boundsError("the query has more than %d selections (fields, fragment spreads and inline fragments, each fragment counted in full wherever it is spread), the server's limit (--max-selections): ask for less at once", b.maxSelections)
	case total.aliases > b.maxAliases:
		return boundsError("the query has more than %d aliases (each fragment counted in full wherever it is spread), the server's limit (--max-aliases): split it into several requests", b.maxAliases)
	}
	return nil
}

// maxNameBytes bounds one name (field, alias, argument, type, fragment,
// variable, directive): validation compares an unknown name with every
// known one to suggest a correction, at a cost that grows with its length.
const maxNameBytes = 1024

// longName returns the start of the first name in query longer than
// maxNameBytes, or "". Only names count: strings hold values of any length.
// The query has passed the token limit already, so this pass is bounded.
func longName(query string) string {
	lx := lexer.New(&ast.Source{Input: query})
	for {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			return ""
		}
		if tok.Kind == lexer.Name && len(tok.Value) > maxNameBytes {
			return tok.Value[:32]
		}
	}
}

// above returns the least count above the bound n.
func above(n int) int { return min(n, math.MaxInt-1) + 1 }

func boundsError(format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	errcode.Set(err, queryBoundsCode)
	return err
}

// tally counts selections and aliases.
type tally struct{ selections, aliases int }

// selectionCounter counts the selections and aliases of selection sets with
// the fragments they spread expanded. Each fragment is counted once
// (memo), so a document of any shape costs time linear in its length, and
// counts saturate at cap, so they never overflow.
type selectionCounter struct {
	frags map[string]*ast.FragmentDefinition
	memo  map[string]tally
	// open and path hold the fragments being counted, to find cycles.
	open map[string]bool
	path []string
	cap  tally
	// cycle names the first fragment found to spread itself, cyclePath
	// the spreads that lead back to it.
	cycle, cyclePath string
}

// document counts every operation, and every fragment no operation
// spreads (the validator works on those too).
func (c *selectionCounter) document(doc *ast.QueryDocument) tally {
	var total tally
	for _, op := range doc.Operations {
		total = c.add(total, c.set(op.SelectionSet))
	}
	for _, f := range doc.Fragments {
		if _, spread := c.memo[f.Name]; !spread {
			total = c.add(total, c.fragment(f))
		}
	}
	return total
}

func (c *selectionCounter) add(a, b tally) tally {
	return tally{saturated(a.selections, b.selections, c.cap.selections), saturated(a.aliases, b.aliases, c.cap.aliases)}
}

// saturated adds two counts of at most limit, giving at most limit.
func saturated(a, b, limit int) int {
	if a > limit-b {
		return limit
	}
	return a + b
}

func (c *selectionCounter) set(set ast.SelectionSet) tally {
	var t tally
	for _, sel := range set {
		t = c.add(t, tally{selections: 1})
		switch s := sel.(type) {
		case *ast.Field:
			if s.Alias != "" && s.Alias != s.Name {
				t = c.add(t, tally{aliases: 1})
			}
			t = c.add(t, c.set(s.SelectionSet))
		case *ast.InlineFragment:
			t = c.add(t, c.set(s.SelectionSet))
		case *ast.FragmentSpread:
			if f := c.frags[s.Name]; f != nil { // the validator refuses unknown fragments
				t = c.add(t, c.fragment(f))
			}
		}
	}
	return t
}

// fragment counts a fragment's selections with the fragments it spreads
// expanded; a fragment that spreads itself counts as empty, and is noted.
func (c *selectionCounter) fragment(f *ast.FragmentDefinition) tally {
	if t, ok := c.memo[f.Name]; ok {
		return t
	}
	if c.open[f.Name] {
		if c.cycle == "" {
			from := slices.Index(c.path, f.Name)
			c.cycle, c.cyclePath = f.Name, strings.Join(c.path[from:], " -> ")+" -> "+f.Name
		}
		return tally{}
	}
	c.open[f.Name] = true
	c.path = append(c.path, f.Name)
	t := c.set(f.SelectionSet)
	c.path = c.path[:len(c.path)-1]
	delete(c.open, f.Name)
	c.memo[f.Name] = t
	return t
}

// The least bounds Config.Validate accepts: below them ordinary requests
// would be refused. chunklock's client publishes 25 chunks per request
// (25 aliases, 535 tokens); the playground's schema query has 193
// selections.
const (
	minTokens     = 1000
	minSelections = 250
	minAliases    = 25
)
