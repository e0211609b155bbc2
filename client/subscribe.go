package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chunklock/chunklock/backends"
)

// errSubscriptionClosed is what a subscription ends with once Close was
// called.
var errSubscriptionClosed = errors.New("client: subscription closed")

// Operation is one GraphQL subscription.
type Operation struct {
	Query     string
	Variables map[string]any
}

// Message is one result of a subscription.
type Message struct {
	// Op is the index of the operation (in the order given to Subscribe)
	// the result belongs to.
	Op   int
	Data json.RawMessage
}

// Subscription is a websocket carrying one or more GraphQL subscriptions
// (the graphql-transport-ws protocol). Read results with Next; Close ends it.
type Subscription struct {
	conn   *websocket.Conn
	msgs   chan Message
	cancel context.CancelFunc
	done   chan struct{}
	closed chan struct{}
	once   sync.Once

	mu  sync.Mutex
	err error // why the subscription ended
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Subscribe opens a websocket to the server and starts ops on it. It
// returns once the server has accepted the connection; an operation the
// server refuses ends the subscription with that error (see Next).
func (c *Client) Subscribe(ctx context.Context, ops ...Operation) (*Subscription, error) {
	if len(ops) == 0 {
		return nil, errors.New("client: subscribe: no operation given")
	}
	header := http.Header{}
	if c.token != "" {
		header.Set("Authorization", "Bearer "+c.token)
	}
	if c.jobKey != "" {
		header.Set("X-Chunklock-Job-Key", c.jobKey)
	}
	dialCtx, cancelDial := context.WithTimeout(ctx, 30*time.Second)
	defer cancelDial()
	conn, resp, err := websocket.Dial(dialCtx, c.endpoint, &websocket.DialOptions{
		HTTPClient: c.http, HTTPHeader: header, Subprotocols: []string{"graphql-transport-ws"},
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, &Error{Code: backends.CodeUnauthenticated, Message: "the server refused the token: set CHUNKLOCK_TOKEN to a token from the server's tokens file"}
		}
		return nil, unavailable(err, "cannot open a websocket to %s: %v", c.endpoint, err)
	}
	conn.SetReadLimit(16 << 20)
	fail := func(err error) (*Subscription, error) {
		_ = conn.Close(websocket.StatusNormalClosure, "")
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	init := map[string]any{}
	if c.token != "" {
		init["Authorization"] = "Bearer " + c.token
	}
	if err := writeMsg(dialCtx, conn, "", "connection_init", init); err != nil {
		return fail(unavailable(err, "websocket to %s: %v", c.endpoint, err))
	}
	for {
		m, err := readMsg(dialCtx, conn)
		if err != nil {
			if code := websocket.CloseStatus(err); code == 4403 || code == 4401 {
				return fail(&Error{Code: backends.CodeUnauthenticated, Message: "the server refused the token: set CHUNKLOCK_TOKEN to a token from the server's tokens file"})
			}
			return fail(unavailable(err, "websocket to %s: waiting for connection_ack: %v", c.endpoint, err))
		}
		if m.Type == "ping" {
			if err := writeMsg(dialCtx, conn, "", "pong", nil); err != nil {
				return fail(unavailable(err, "websocket to %s: %v", c.endpoint, err))
			}
			continue
		}
		if m.Type == "connection_ack" {
			break
		}
		return fail(fmt.Errorf("client: websocket to %s: expected connection_ack, got %q", c.endpoint, m.Type))
	}
	for i, op := range ops {
		payload := map[string]any{"query": op.Query, "variables": op.Variables}
		if err := writeMsg(dialCtx, conn, strconv.Itoa(i), "subscribe", payload); err != nil {
			return fail(unavailable(err, "websocket to %s: %v", c.endpoint, err))
		}
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Subscription{conn: conn, msgs: make(chan Message, 64), cancel: cancel, done: make(chan struct{}), closed: make(chan struct{})}
	go s.read(rctx, len(ops))
	return s, nil
}

// read dispatches the server's messages until the connection ends.
func (s *Subscription) read(ctx context.Context, live int) {
	defer close(s.done)
	defer close(s.msgs)
	for {
		m, err := readMsg(ctx, s.conn)
		if err != nil {
			if ctx.Err() != nil {
				s.end(errSubscriptionClosed)
			} else {
				s.end(unavailable(err, "the event stream broke: %v", err))
			}
			return
		}
		switch m.Type {
		case "ping":
			if err := writeMsg(ctx, s.conn, "", "pong", nil); err != nil {
				s.end(unavailable(err, "the event stream broke: %v", err))
				return
			}
		case "next":
			op, _ := strconv.Atoi(m.ID)
			var payload struct {
				Data   json.RawMessage `json:"data"`
				Errors []wireError     `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &payload); err != nil {
				s.end(fmt.Errorf("client: the server sent an unreadable result: %w", err))
				return
			}
			if len(payload.Errors) > 0 {
				s.end(payload.Errors[0].toError())
				return
			}
			select {
			case s.msgs <- Message{Op: op, Data: payload.Data}:
			case <-ctx.Done():
				s.end(errSubscriptionClosed)
				return
			}
		case "error":
			var errs []wireError
			_ = json.Unmarshal(m.Payload, &errs)
			if len(errs) == 0 {
				s.end(errors.New("client: the server refused the subscription"))
			} else {
				s.end(errs[0].toError())
			}
			return
		case "complete":
			if live--; live == 0 {
				s.end(unavailable(nil, "the server ended the event stream"))
				return
			}
		}
	}
}

func (s *Subscription) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Next returns the next result. When the subscription has ended it returns
// why: an UNAVAILABLE *Error when the connection broke (resubscribe or fall
// back to polling), the server's error when it refused an operation, or
// "client: subscription closed" once Close was called.
func (s *Subscription) Next(ctx context.Context) (Message, error) {
	select {
	case <-s.closed:
		return Message{}, errSubscriptionClosed
	default:
	}
	select {
	case <-s.closed:
		return Message{}, errSubscriptionClosed
	case m, ok := <-s.msgs:
		if !ok {
			s.mu.Lock()
			defer s.mu.Unlock()
			return Message{}, s.err
		}
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// Messages returns the channel of results; it is closed when the
// subscription ends, and Err then tells why.
func (s *Subscription) Messages() <-chan Message { return s.msgs }

// Err tells why the subscription ended (nil while it runs).
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and its connection.
func (s *Subscription) Close() error {
	s.once.Do(func() { close(s.closed) })
	s.cancel()
	<-s.done
	_ = s.conn.CloseNow()
	return nil
}

func writeMsg(ctx context.Context, conn *websocket.Conn, id, typ string, payload any) error {
	m := wsMessage{ID: id, Type: typ}
	if payload != nil {
		raw, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		m.Payload = raw
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, raw)
}

func readMsg(ctx context.Context, conn *websocket.Conn) (wsMessage, error) {
	_, raw, err := conn.Read(ctx)
	if err != nil {
		return wsMessage{}, err
	}
	var m wsMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return wsMessage{}, fmt.Errorf("unreadable websocket message: %w", err)
	}
	return m, nil
}

// WatchEvents subscribes to the events of each filter (one subscription
// per filter on one connection; a filter's DataID is not supported by the
// server's subscription and must be checked by the caller). With after, the
// server first replays what was recorded since that cursor.
func (c *Client) WatchEvents(ctx context.Context, after string, filters ...EventFilter) (*Subscription, error) {
	if len(filters) == 0 {
		filters = []EventFilter{{}}
	}
	ops := make([]Operation, len(filters))
	for i, f := range filters {
		vars := map[string]any{}
		if f.Dataset != "" {
			vars["dataset"] = f.Dataset
		}
		if f.Job != "" {
			vars["job"] = f.Job
		}
		if after != "" {
			vars["after"] = after
		}
		ops[i] = Operation{Query: `subscription($dataset: String, $job: String, $after: String) {
			events(dataset: $dataset, job: $job, after: $after) { ` + EventFields + ` } }`, Variables: vars}
	}
	return c.Subscribe(ctx, ops...)
}

// DecodeEvent decodes a Message of a WatchEvents subscription.
func DecodeEvent(m Message) (Event, error) {
	var out struct {
		Events Event `json:"events"`
	}
	err := json.Unmarshal(m.Data, &out)
	return out.Events, err
}
