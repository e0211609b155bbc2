package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// wsClient speaks graphql-transport-ws.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	ctx  context.Context
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// dialWS opens a websocket to s and sends connection_init with the token of
// who (none for nobody); it does not wait for the answer.
func (s *stack) dialWS(ctx context.Context, who string) *wsClient {
	s.t.Helper()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = conn.CloseNow() })
	c := &wsClient{t: s.t, conn: conn, ctx: ctx}
	payload := map[string]string{}
	if who != nobody {
		payload["Authorization"] = "Bearer " + s.tokens[who]
	}
	c.send(wsMessage{Type: "connection_init", Payload: mustJSON(s.t, payload)})
	return c
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func (c *wsClient) send(m wsMessage) {
	c.t.Helper()
	require.NoError(c.t, wsjson.Write(c.ctx, c.conn, m))
}

// next reads the next message that is not a ping (it answers pings).
func (c *wsClient) next() (wsMessage, error) {
	for {
		var m wsMessage
		if err := wsjson.Read(c.ctx, c.conn, &m); err != nil {
			return m, err
		}
		if m.Type == "ping" {
			c.send(wsMessage{Type: "pong"})
			continue
		}
		return m, nil
	}
}

func (c *wsClient) expect(typ string) wsMessage {
	c.t.Helper()
	m, err := c.next()
	require.NoError(c.t, err)
	require.Equal(c.t, typ, m.Type, "payload: %s", m.Payload)
	return m
}

func (c *wsClient) subscribe(id, query string) {
	c.t.Helper()
	c.send(wsMessage{ID: id, Type: "subscribe", Payload: mustJSON(c.t, map[string]any{"query": query})})
}

type eventDoc struct {
	Dataset, DataID, Role, From, To, Actor, Cursor string
	Job                                            *string
}

// nextEvent reads the next "next" message of a subscription to events.
func (c *wsClient) nextEvent() eventDoc {
	c.t.Helper()
	m := c.expect("next")
	var p struct {
		Data struct {
			Events eventDoc
		}
		Errors []gqlError
	}
	require.NoError(c.t, json.Unmarshal(m.Payload, &p))
	require.Empty(c.t, p.Errors, "%s", m.Payload)
	return p.Data.Events
}

// awaitLive waits until a subscription to every event, just sent on ws, is
// live: it starts at the present once its resolver has run, so publish
// chunks of a (a/100, a/101, ...) through s until one arrives, and return
// that event.
func awaitLive(t *testing.T, ctx context.Context, ws *wsClient, s *stack) eventDoc {
	t.Helper()
	arrived := make(chan eventDoc, 1)
	go func() {
		defer close(arrived)
		m, err := ws.next()
		if err == nil && m.Type == "next" {
			var p struct{ Data struct{ Events eventDoc } }
			if json.Unmarshal(m.Payload, &p) == nil {
				arrived <- p.Data.Events
			}
		}
	}()
	for i := 0; ; i++ {
		s.publish("a", fmt.Sprintf("%d", 100+i))
		select {
		case ev, ok := <-arrived:
			require.True(t, ok, "the subscription ended before any event")
			return ev
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no event reached the subscriber")
		}
	}
}

// TestSubscriptionAcrossReplicas subscribes on one server and makes the
// transitions through another sharing the same store: the subscriber sees
// them, in order, as the store's change feed delivers them.
func TestSubscriptionAcrossReplicas(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		stores := kind.Open(t, backends.SystemClock{}, 2)
		one := newStack(t, stores[0])
		two := newReplica(t, stores[1], one)
		two.define()

		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		ws := one.dialWS(ctx, reader)
		ws.expect("connection_ack")
		ws.subscribe("1", `subscription { events { dataset dataid role from to actor cursor job } }`)
		first := awaitLive(t, ctx, ws, two)
		require.Equal(t, "a", first.Dataset)
		require.Equal(t, "READY", first.To)
		require.Nil(t, first.Job)

		// Drain the remaining publish events, then watch a claim go by.
		two.publish("a", "1")
		for ev := ws.nextEvent(); ev.DataID != "1"; ev = ws.nextEvent() {
			require.Equal(t, "a", ev.Dataset)
		}
		c := two.findNext(runnerA, "ja", "replica-two", "")
		require.NotNil(t, c)
		two.ok(runnerA, completeQ, vars("t", *c.Token))
		var got []string
		for len(got) < 4 {
			ev := ws.nextEvent()
			if ev.DataID != "1" {
				continue // a claim of another published dataid
			}
			got = append(got, fmt.Sprintf("%s/%s %s %s->%s by %s", ev.Dataset, ev.DataID, ev.Role, ev.From, ev.To, ev.Actor))
		}
		require.Equal(t, []string{
			"b/1 OUTPUT NONE->RUNNING by runner-a",
			"a/1 INPUT NONE->RUNNING by runner-a",
			"a/1 INPUT RUNNING->DONE by runner-a",
			"b/1 OUTPUT RUNNING->READY by runner-a",
		}, got)

		// A second subscription resumes after a cursor, filtered.
		ws2 := one.dialWS(ctx, admin)
		ws2.expect("connection_ack")
		ws2.subscribe("2", fmt.Sprintf(`subscription { events(dataset: "b", after: %q) { dataset dataid from to } }`, first.Cursor))
		ev := ws2.nextEvent()
		require.Equal(t, []string{"b", "1", "NONE", "RUNNING"}, []string{ev.Dataset, ev.DataID, ev.From, ev.To})
		ws2.send(wsMessage{ID: "2", Type: "complete"})
	})
}

// TestSubscriptionAuth: a websocket authenticates with its connection_init
// payload; without a valid token it is closed with 4403; subscriptions to
// an unknown dataset answer NOT_FOUND.
func TestSubscriptionAuth(t *testing.T) {
	s := newStack(t, storeKinds[0].Open(t, backends.SystemClock{}, 1)[0])
	s.define()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	ws := s.dialWS(ctx, nobody)
	_, err := ws.next()
	require.Equal(t, websocket.StatusCode(4403), websocket.CloseStatus(err), "err: %v", err)

	ws = s.dialWS(ctx, reader)
	ws.expect("connection_ack")
	ws.subscribe("1", `subscription { events(dataset: "nope") { dataid } }`)
	m := ws.expect("next")
	var p struct{ Errors []gqlError }
	require.NoError(t, json.Unmarshal(m.Payload, &p))
	require.Equal(t, "NOT_FOUND", p.Errors[0].Extensions["code"], "%s", m.Payload)
	ws.expect("complete")
}

// TestSubscriptionOverHTTPRefused: a subscription sent by POST or GET is
// answered at once with 400 and INVALID_ARGUMENT pointing to the websocket
// transport, instead of waiting for an event (the client's timeout turns a
// hang into a failure).
func TestSubscriptionOverHTTPRefused(t *testing.T) {
	s := newStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0])
	s.define()
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		r := s.send(request{who: reader, method: method, query: `subscription { events { dataset dataid } }`, timeout: 10 * time.Second})
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", method, r.Body)
		require.Equal(t, "INVALID_ARGUMENT", r.code(t), method)
		require.Contains(t, r.Errors[0].Message, "websocket", method)
		require.Contains(t, r.Errors[0].Message, "graphql-transport-ws", method)
	}
}
