package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// api is a chunklock server's GraphQL endpoint, reached as any client
// would: POST /graphql, no token (the benchmark's servers run open on
// 127.0.0.1).
type api struct {
	base string // http://127.0.0.1:port
	http *http.Client
}

func newAPI(base string, conns int) *api {
	return &api{base: base, http: &http.Client{Timeout: 30 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: 0}}}
}

// gqlError is an error the server answered with.
type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

func (e *gqlError) Error() string { return e.Extensions.Code + ": " + e.Message }

// do runs one operation and decodes its data into out (nil: dropped). The
// first GraphQL error is returned as a *gqlError.
func (a *api) do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("HTTP %d, not GraphQL: %.200q", resp.StatusCode, raw)
	}
	if len(env.Errors) > 0 {
		return &env.Errors[0]
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Data, out)
}

// timed runs do and returns how long the answer took.
func (a *api) timed(ctx context.Context, query string, vars map[string]any, out any) (time.Duration, error) {
	t0 := time.Now()
	err := a.do(ctx, query, vars, out)
	return time.Since(t0), err
}

// get fetches a plain endpoint (/healthz, /readyz) and returns its status
// code and body.
func (a *api) get(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
