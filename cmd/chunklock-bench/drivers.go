package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/chunklock/chunklock/client"
)

// The drivers of the GraphQL API, and pool mode (-mode pool or both): one
// runner with R slots claims for all of them with claimNext and completes
// them with completeMany (bench.RunPool).

// modes lists the runs of -mode: false for single runners, true for a pool.
func modes(mode string) []bool {
	switch mode {
	case "pool":
		return []bool{true}
	case "both":
		return []bool{false, true}
	}
	return []bool{false}
}

// graphqlDriver runs cycles through the HTTP API.
type graphqlDriver struct{ c *client.Client }

func (g graphqlDriver) FindNext(ctx context.Context, job, executor string) (string, bool, error) {
	var out struct {
		FindNext *struct{ Token string } `json:"findNext"`
	}
	err := g.c.Do(ctx, `mutation($job: String!, $ex: String!) { findNext(job: $job, executor: $ex) { token } }`,
		map[string]any{"job": job, "ex": executor}, &out)
	if err != nil || out.FindNext == nil {
		return "", false, err
	}
	return out.FindNext.Token, true, nil
}

func (g graphqlDriver) Complete(ctx context.Context, token string) error {
	return g.c.Do(ctx, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": token}, nil)
}

func (g graphqlDriver) ClaimNext(ctx context.Context, job, executor string, max int) ([]string, error) {
	var out struct{ ClaimNext []struct{ Token string } }
	err := g.c.Do(ctx, `mutation($job: String!, $ex: String!, $max: Int!) { claimNext(job: $job, executor: $ex, max: $max) { token } }`,
		map[string]any{"job": job, "ex": executor, "max": max}, &out)
	tokens := make([]string, len(out.ClaimNext))
	for i, c := range out.ClaimNext {
		tokens[i] = c.Token
	}
	return tokens, err
}

func (g graphqlDriver) CompleteMany(ctx context.Context, tokens []string) error {
	var out struct {
		CompleteMany []struct {
			Token string
			OK    bool
			Code  string
		}
	}
	err := g.c.Do(ctx, `mutation($t: [String!]!) { completeMany(tokens: $t) { token ok code } }`, map[string]any{"t": tokens}, &out)
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range out.CompleteMany {
		if !r.OK {
			bad = append(bad, r.Token+": "+r.Code)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("completeMany: %s", strings.Join(bad, ", "))
	}
	return nil
}
