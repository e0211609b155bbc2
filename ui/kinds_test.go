package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// everyKind is a catalog with every partition kind side by side, around
// now: hourly (the last five days), daily (a job loading the last 40 days
// from a daily source), weekly, monthly, integer, static and a dataset
// without a definition.
type everyKind struct {
	today     time.Time
	heldHour  string // an hour of hourly on HOLD (two days ago, 05:00)
	failedDay string // a day of daily FAILED
	runDay    string // a day of daily RUNNING
}

func seedEveryKind(t *testing.T, s *stack) everyKind {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	today := now.Truncate(24 * time.Hour)
	k := everyKind{today: today}
	day := func(n int) string { return today.AddDate(0, 0, n).Format(time.DateOnly) }
	hour := today.AddDate(0, 0, -5)
	deadline := time.Hour
	defs := []backends.Dataset{
		{ID: "hourly", Partitions: &partition.Def{Kind: partition.Hourly, Start: hour.Format("2006-01-02T15"), Deadline: &deadline}},
		{ID: "daily-in", Partitions: &partition.Def{Kind: partition.Daily, Start: day(-40)}},
		{ID: "daily", Partitions: &partition.Def{Kind: partition.Daily, Start: day(-40)}},
		{ID: "weekly", Partitions: &partition.Def{Kind: partition.Weekly, Start: isoWeek(today.AddDate(0, 0, -70))}},
		{ID: "monthly", Partitions: &partition.Def{Kind: partition.Monthly, Start: today.AddDate(0, -6, 0).Format("2006-01")}},
		{ID: "batches", Partitions: &partition.Def{Kind: partition.Integer, Start: "1"}},
		{ID: "regions", Partitions: &partition.Def{Kind: partition.Static, Values: []string{"eu", "us", "apac"}}},
		{ID: "landing"},
	}
	for _, d := range defs {
		d.Location = "/lake/" + d.ID + "/{dataid}"
		_, err := s.store.UpsertDataset(ctx, d)
		require.NoError(t, err)
	}
	_, err := s.store.UpsertJob(ctx, backends.Job{ID: "load", Inputs: []string{"daily-in"}, Output: "daily", MaxAttempts: 3, RetryDelaySeconds: 3600})
	require.NoError(t, err)
	publish := func(ds string, ids ...string) {
		for _, id := range ids {
			_, err := s.store.Publish(ctx, ds, id)
			require.NoError(t, err, "%s %s", ds, id)
		}
	}
	k.heldHour = today.AddDate(0, 0, -2).Add(5 * time.Hour).Format("2006-01-02T15")
	for h := hour; h.Before(now.Add(-3 * time.Hour)); h = h.Add(time.Hour) {
		if id := h.Format("2006-01-02T15"); id != k.heldHour {
			publish("hourly", id)
		}
	}
	_, err = s.store.Hold(ctx, "hourly", k.heldHour, "sensor offline")
	require.NoError(t, err)
	_, err = s.store.PublishRange(ctx, "daily-in", day(-40), day(-1))
	require.NoError(t, err)
	k.failedDay, k.runDay = day(-8), day(-3)
	for {
		c, err := s.store.FindNext(ctx, "load", "loader-1")
		require.NoError(t, err)
		if c == nil || c.DataID == k.runDay {
			break
		}
		if c.DataID == k.failedDay {
			// Failed once, with a backoff long enough that nothing claims it again here.
			require.NoError(t, s.store.Fail(ctx, c.Token, "schema drift"))
			continue
		}
		require.NoError(t, s.store.Complete(ctx, c.Token))
	}
	for w := today.AddDate(0, 0, -70); w.Before(today.AddDate(0, 0, -14)); w = w.AddDate(0, 0, 7) {
		publish("weekly", isoWeek(w))
	}
	for m := today.AddDate(0, -6, 0); m.Before(today.AddDate(0, -1, 0)); m = m.AddDate(0, 1, 0) {
		publish("monthly", m.Format("2006-01"))
	}
	for i := 1; i <= 40; i++ {
		if i != 17 && i != 18 {
			publish("batches", fmt.Sprint(i))
		}
	}
	publish("regions", "eu", "us")
	publish("landing", "2026-q1", "2026-q2", "backfill-7")
	return k
}

func isoWeek(t time.Time) string {
	y, w := t.ISOWeek()
	return fmt.Sprintf("%04d-W%02d", y, w)
}

// TestEveryKindSideBySide: hourly, daily, weekly, monthly, integer, static
// and undefined datasets on one page. The time kinds share one axis of
// days: hours summed per day (a day with a held hour drawn mixed, its
// counts on hover), days as cells, a week over its seven days, a month over
// its days; the others on axes of their own. A day of hours opens at the
// hour level on click.
func TestEveryKindSideBySide(t *testing.T) {
	s := newStack(t, false, "load")
	k := seedEveryKind(t, s)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	require.Equal(t, "DAILY", eval[string](t, tb, `window.chunklock.view().zoom`))
	for _, ds := range []string{"hourly", "daily-in", "daily", "weekly", "monthly", "batches", "regions", "landing"} {
		tb.poll(t, fmt.Sprintf(`document.querySelector('.grow[data-ds=%q] .seg') && true`, ds))
	}

	// Hours, per day.
	heldDay := k.heldHour[:10]
	c := cellOf(t, tb, "hourly", k.heldHour)
	require.Equal(t, "MIXED", c.Status)
	require.Contains(t, underCell(t, tb, "hourly", k.heldHour), "s-MIXED")
	tb.do(t, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, c.X, c.Y))
	tip := tb.poll(t, `(() => { const t = document.getElementById('tip'); return !t.hidden && t.textContent; })()`)
	require.Equal(t, "hourly "+heldDay+": 24 hours: 23 READY, 1 HOLD, 1 late", tip)
	require.Equal(t, "READY", cellOf(t, tb, "hourly", k.today.AddDate(0, 0, -3).Format("2006-01-02T15")).Status)

	// Days, as cells.
	require.Equal(t, "FAILED", cellOf(t, tb, "daily", k.failedDay).Status)
	require.Equal(t, "RUNNING", cellOf(t, tb, "daily", k.runDay).Status)
	require.Contains(t, underCell(t, tb, "daily", k.failedDay), "s-FAILED")

	// A week over its seven days, a month over its days.
	weekSpan := func(ds, id string) float64 {
		return eval[float64](t, tb, fmt.Sprintf(`document.querySelector('.grow[data-ds=%q] .seg[data-from=%q]').getBoundingClientRect().width`, ds, id))
	}
	cw := eval[float64](t, tb, `parseFloat(getComputedStyle(document.getElementById('grid')).getPropertyValue('--cw'))`)
	week := isoWeek(k.today.AddDate(0, 0, -28))
	require.InDelta(t, 7*cw, weekSpan("weekly", week), 0.5, "a week spans seven day columns")
	month := k.today.AddDate(0, -1, 0) // all in sight: the view holds about 70 days
	daysIn := time.Date(month.Year(), month.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
	require.InDelta(t, float64(daysIn)*cw, weekSpan("monthly", month.Format("2006-01")), 0.5, "a month spans its days")

	// Integer, static and undefined datasets on axes of their own.
	other := func(ds string) string {
		return eval[string](t, tb, fmt.Sprintf(`Array.from(document.querySelectorAll('.grow[data-ds=%q] .seg')).map(s => s.dataset.from + '..' + s.dataset.to + ' ' + s.className.split(' ')[1]).join(', ')`, ds))
	}
	require.Equal(t, "1..16 s-READY, 17..18 s-NONE, 19..40 s-READY", other("batches"))
	require.Equal(t, "eu..us s-READY, apac..apac s-NONE", other("regions"))
	require.Equal(t, "2026-q1..backfill-7 s-READY", other("landing"))
	tb.screenshot(t, "every-kind")

	// A day of hours opens at the hour level.
	eval[bool](t, tb, `window.__sameLoad = true`)
	tb.do(t, chromedp.MouseClickXY(c.X, c.Y))
	tb.poll(t, `(window.chunklock.view() || {}).zoom === 'HOURLY'`)
	require.Equal(t, "HOLD", tb.poll(t, fmt.Sprintf(`(window.chunklock.cell("hourly", %q) || {}).status`, k.heldHour)))
	require.Equal(t, "HOLD", eval[string](t, tb, fmt.Sprintf(`window.chunklock.cell("hourly", %q).status`, k.heldHour)))
	require.Contains(t, eval[string](t, tb, `location.hash`), "from="+heldDay+"T00&to="+heldDay+"T23")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
	tb.screenshot(t, "every-kind-hours")
}

// TestChunkPageWhenADownstreamLookupFails: a dataset without a definition
// read by a job into a DAILY output. Its chunk "backfill-7" is not a date:
// the server refuses the consumer's blockers at that dataid. The chunk's
// page is drawn all the same, with that consumer's row saying why it could
// not be looked up; a consumer that can be looked up keeps its row.
func TestChunkPageWhenADownstreamLookupFails(t *testing.T) {
	s := newStack(t, false, "copy")
	ctx := context.Background()
	for _, d := range []backends.Dataset{
		{ID: "landing"},
		{ID: "days", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}},
		{ID: "copies"},
	} {
		d.Location = "/lake/" + d.ID + "/{dataid}"
		_, err := s.store.UpsertDataset(ctx, d)
		require.NoError(t, err)
	}
	for _, j := range []backends.Job{
		{ID: "sort", Inputs: []string{"landing"}, Output: "days"},
		{ID: "copy", Inputs: []string{"landing"}, Output: "copies"},
	} {
		_, err := s.store.UpsertJob(ctx, j)
		require.NoError(t, err)
	}
	_, err := s.store.Publish(ctx, "landing", "backfill-7")
	require.NoError(t, err)

	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.do(t, chromedp.Navigate(s.url+"/ui#/chunk/landing/backfill-7"))
	tb.poll(t, `document.getElementById('chunk-status') && document.getElementById('chunk-status').textContent === 'READY' && document.querySelector('#waits') && true`)
	rows := eval[string](t, tb, `Array.from(document.querySelectorAll('#waits tr')).slice(1).map(r => r.innerText.replace(/\s+/g, ' ').trim()).join('\n')`)
	require.Contains(t, rows, "copy copies backfill-7")
	require.Contains(t, rows, "nothing: claimable or produced")
	require.Regexp(t, `sort days backfill-7 .*not looked up: .*backfill-7`, rows)
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#waits a[href="#/chunk/days/backfill-7"]').length`), "a chunk the server refuses is not linked")
	tb.poll(t, `document.querySelectorAll('#lockgraph').length === 1`)
	tb.screenshot(t, "chunk-downstream-refused")
}
