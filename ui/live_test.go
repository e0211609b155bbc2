package ui_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestLiveRecolours: on the quick start with transform's claims of
// 2026-01-20 and 01-21 still running, a completion recolours its day's
// cell, and at the week zoom another completion recolours its week's
// summary (2026-W04, whose days were READY but one), without a reload: the
// events come through the graphql-ws subscription.
func TestLiveRecolours(t *testing.T) {
	s := newStack(t, false, "transform")
	kept := seedQuickStart(t, s, "transform/2026-01-20", "transform/2026-01-21")
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	eval[bool](t, tb, `window.__sameLoad = true`)
	require.Equal(t, "RUNNING", cellStatus(t, tb, "orders-clean", "2026-01-20"))

	require.NoError(t, s.store.Complete(context.Background(), kept["transform/2026-01-20"]))
	waitCell(t, tb, "orders-clean", "2026-01-20", "READY")
	require.Contains(t, underCell(t, tb, "orders-clean", "2026-01-20"), "s-READY")

	tb.do(t, chromedp.Click(chromedp.CSS(`#range button[data-zoom="WEEKLY"]`)))
	tb.poll(t, `(window.chunklock.view() || {}).zoom === 'WEEKLY'`)
	waitCell(t, tb, "orders-clean", "2026-01-21", "MIXED")
	require.Equal(t, "orders-clean 2026-W04: 7 days: 6 READY, 1 RUNNING", cellOf(t, tb, "orders-clean", "2026-01-21").Text)
	tb.screenshot(t, "live-week")

	require.NoError(t, s.store.Complete(context.Background(), kept["transform/2026-01-21"]))
	waitCell(t, tb, "orders-clean", "2026-01-21", "READY")
	require.Contains(t, underCell(t, tb, "orders-clean", "2026-01-21"), "s-READY")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}

// TestLiveResumesAfterReconnect: when the websocket drops, graphql-ws
// reconnects and the subscription resumes after the last event the page
// saw, so a completion made while it was away still recolours its cell.
func TestLiveResumesAfterReconnect(t *testing.T) {
	s := newStack(t, false, "transform")
	kept := seedQuickStart(t, s, "transform/2026-01-20")
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	eval[bool](t, tb, `window.__sameLoad = true`)

	eval[bool](t, tb, `(window.chunklock.dropConnection(), true)`)
	tb.poll(t, `document.getElementById('live').textContent === 'reconnecting'`)
	require.NoError(t, s.store.Complete(context.Background(), kept["transform/2026-01-20"]))
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	waitCell(t, tb, "orders-clean", "2026-01-20", "READY")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}
