// Package client talks to a chunklock server over its GraphQL API, the same
// way any runner or script could with curl: POST /graphql with a bearer
// token, the job key in X-Chunklock-Job-Key, and subscriptions over a
// graphql-transport-ws websocket.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/internal/urlerr"
)

// ErrNotGraphQL is in the error of a request whose answer was not a
// GraphQL response: the URL is most likely not a chunklock server's.
var ErrNotGraphQL = errors.New("is the URL a chunklock server's?")

// Client is a chunklock API client. The zero value is not usable; use New.
type Client struct {
	endpoint string // .../graphql
	token    string
	jobKey   string
	http     *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithJobKey sets the job key sent in X-Chunklock-Job-Key, which lets the
// server decrypt the job's dataset secrets into a claim.
func WithJobKey(key string) Option { return func(c *Client) { c.jobKey = key } }

// WithHTTPClient replaces the HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// New returns a client for the server at baseURL (e.g. http://127.0.0.1:8080;
// a URL ending in /graphql is used as is).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server URL %q is not an http(s) URL like http://127.0.0.1:8080", baseURL)
	}
	if !strings.HasSuffix(u.Path, "/graphql") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/graphql"
	}
	c := &Client{endpoint: u.String(), http: &http.Client{Timeout: 60 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Endpoint returns the GraphQL endpoint URL.
func (c *Client) Endpoint() string { return c.endpoint }

// Error is an error the server answered with, or UNAVAILABLE when the
// server could not be reached. Code is extensions.code (NOT_FOUND, LOCKED,
// STALE_CLAIM, ...).
type Error struct {
	Code     backends.Code
	Message  string
	Path     []any
	Blockers []backends.Blocker
	// Holders are the resource locks that refused a lockResource (LOCKED).
	Holders []ResourceLock
	// Err is the transport failure behind an UNAVAILABLE error that did not
	// come from the server (connection refused, timeout, a proxy's 503).
	Err error
}

func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the transport failure, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, backends.ErrStaleClaim) and friends work on
// errors from the server.
func (e *Error) Is(target error) bool {
	var be *backends.Error
	if errors.As(target, &be) && be.Message == "" {
		return be.Code == e.Code
	}
	return false
}

// CodeOf returns the server's code for err (UNAVAILABLE for a server that
// could not be reached), "" for nil, and INTERNAL for any other error.
func CodeOf(err error) backends.Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return backends.CodeInternal
}

// IsTransient tells whether err may go away on retry: the server could not
// be reached, or it answered UNAVAILABLE. The caller's own cancelled or
// expired context is returned as is by Do, and is not transient.
func IsTransient(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == backends.CodeUnavailable
}

// unavailable wraps a transport failure.
func unavailable(cause error, format string, args ...any) *Error {
	return &Error{Code: backends.CodeUnavailable, Message: fmt.Sprintf(format, args...), Err: cause}
}

type wireError struct {
	Message    string `json:"message"`
	Path       []any  `json:"path"`
	Extensions struct {
		Code     backends.Code `json:"code"`
		Blockers []struct {
			Dataset string     `json:"dataset"`
			DataID  string     `json:"dataid"`
			Job     string     `json:"job"`
			Kind    string     `json:"kind"`
			Status  string     `json:"status"`
			Until   *time.Time `json:"until"`
			Pool    *string    `json:"pool"`
		} `json:"blockers"`
		Holders []ResourceLock `json:"holders"`
	} `json:"extensions"`
}

func (w wireError) toError() *Error {
	e := &Error{Code: w.Extensions.Code, Message: w.Message, Path: w.Path, Holders: w.Extensions.Holders}
	for _, b := range w.Extensions.Blockers {
		bb := backends.Blocker{Dataset: b.Dataset, DataID: b.DataID, Job: b.Job,
			Kind: backends.BlockerKind(b.Kind), Status: wireStatus(b.Status)}
		if b.Until != nil {
			bb.Until = *b.Until
		}
		if b.Pool != nil {
			bb.Pool = *b.Pool
		}
		e.Blockers = append(e.Blockers, bb)
	}
	return e
}

// wireStatus reads a status as the schema spells it (NONE for no row).
func wireStatus(s string) backends.Status {
	if s == "NONE" {
		return backends.StatusNone
	}
	return backends.Status(s)
}

// Do runs one GraphQL operation and decodes its data into out (a pointer
// to a struct shaped like the selection). The first GraphQL error is
// returned as *Error, with whatever data did resolve still decoded into
// out; a server that cannot be reached is an UNAVAILABLE *Error, and the
// caller's own cancelled context is returned as ctx.Err().
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.jobKey != "" {
		req.Header.Set("X-Chunklock-Job-Key", c.jobKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return unavailable(err, "cannot reach chunklock at %s: %v", c.endpoint, urlerr.Cause(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return unavailable(err, "reading the answer from %s: %v", c.endpoint, err)
	}
	var envelope struct {
		Data   json.RawMessage `json:"data"`
		Errors []wireError     `json:"errors"`
	}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		snippet := string(raw)
		if len(snippet) > 200 {
			snippet = snippet[:200]
		}
		if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout {
			return unavailable(nil, "%s answered HTTP %d (%q); retry later", c.endpoint, resp.StatusCode, snippet)
		}
		return fmt.Errorf("client: %s answered HTTP %d with something that is not GraphQL (%w): %q", c.endpoint, resp.StatusCode, ErrNotGraphQL, snippet)
	}
	if len(envelope.Errors) > 0 {
		// Keep what did resolve: a claim whose secret failed is still a
		// claim, which the caller must give back.
		if out != nil && len(envelope.Data) > 0 && string(envelope.Data) != "null" {
			_ = json.Unmarshal(envelope.Data, out)
		}
		return envelope.Errors[0].toError()
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("client: %s answered HTTP %d", c.endpoint, resp.StatusCode)
	}
	if out == nil || len(envelope.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(envelope.Data, out); err != nil {
		return fmt.Errorf("client: decoding the answer from %s: %w", c.endpoint, err)
	}
	return nil
}
