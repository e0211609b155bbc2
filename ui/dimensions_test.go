package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestDimensionsDataset: a dataset with dimensions shows them on its page
// (the chip names them, the definition spells each), lists its missing
// tuples, and has a row per region on the overview's time axis, alone or
// beside a one-axis time dataset; a roll-up
// reading it says "all regions" on its edge; no page fails on its
// definition's null kind.
func TestDimensionsDataset(t *testing.T) {
	s := newStack(t, false, "ingest")
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "feeds", location: "/in/{region}/{date}", partitions: {dimensions: [
		{name: "date", kind: DAILY, start: "2020-01-01", end: "2020-01-02"}, {name: "region", kind: STATIC, values: ["us", "eu"]}]}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertJob(input: {id: "ingest", inputs: [], output: "feeds"}) { job { id } } }`, nil)
	c := s.must(t, "admin", `mutation { findNext(job: "ingest", executor: "x") { token dataid } }`, nil)["findNext"].(map[string]any)
	require.Equal(t, "2020-01-01|eu", c["dataid"])
	s.must(t, "admin", `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": c["token"]})
	tb := newTab(t)
	tb.do(t,
		chromedp.Navigate(s.url+"/ui#/dataset/feeds"),
		chromedp.WaitVisible(chromedp.CSS(`#token-input`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), s.tokens["reader"]),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
	)
	tb.poll(t, `document.querySelector('section.dataset[data-dataset="feeds"]') && true`)
	require.Equal(t, "date × region", eval[string](t, tb, `document.querySelector('section.dataset .kindchip').innerText`))
	def := eval[string](t, tb, `document.querySelector('section.dataset p.muted').innerText`)
	require.Contains(t, def, "date: DAILY from 2020-01-01 to 2020-01-02")
	require.Contains(t, def, "region: us, eu")
	missing := tb.poll(t, `(() => { const m = document.querySelector('#missing'); return m && m.innerText })()`)
	require.Contains(t, missing, "2020-01-01|us … 2020-01-02|us (3)")

	// On the overview, a row per region on the time axis (a date first, a
	// STATIC dimension after it), under the dataset's picker, even with no
	// one-axis time dataset beside it.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="feeds"]').length === 2 && !document.querySelector('.grow.other[data-ds="feeds"]')`)
	waitCell(t, tb, "feeds|eu", "2020-01-01", "READY")
	waitCell(t, tb, "feeds|us", "2020-01-01", "NONE")
	require.Contains(t, eval[string](t, tb, `document.querySelector('.gpick[data-pick="feeds"]').innerText`), "per region")

	// A roll-up reads every region of a date: its edge says so.
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "global", location: "/g/{dataid}", partitions: {kind: DAILY, start: "2020-01-01", end: "2020-01-02"}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertJob(input: {id: "roll", inputs: ["feeds"], output: "global"}) { job { id } } }`, nil)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/global"), chromedp.Reload())
	produced := tb.poll(t, `(() => { const p = document.querySelector('section.dataset[data-dataset="global"]'); return p && p.innerText.includes('produced by') && p.innerText })()`)
	require.Contains(t, produced, "feeds all regions")

	// With a one-axis time dataset beside it, the overview draws it a row
	// per region on the time axis.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"), chromedp.Reload())
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="feeds"]').length === 2 && !document.querySelector('.grow.other[data-ds="feeds"]')`)
}

// TestDimensionsRowsPerValue: on the time axis, the quick start's
// revenue-by-region (date × region) has a row per region, each cell a
// tuple's status: a region's held days show on its row only, an event
// redraws the cell of its own region, and a click opens the tuple's chunk.
func TestDimensionsRowsPerValue(t *testing.T) {
	s := newStack(t, false, "extract")
	seedQuickStart(t, s)
	ctx := t.Context()
	res, err := s.store.SlicedRange(ctx, backends.RangeRequest{Op: backends.RangeHold, Dataset: "revenue-by-region", From: "2026-01-20", To: "2026-01-21",
		Slice: []partition.Slice{{Dimension: "region", Values: []string{"apac"}}}, Reason: "late feed"})
	require.NoError(t, err)
	require.Equal(t, 2, res.Changed)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	labels := eval[string](t, tb, `Array.from(document.querySelectorAll('.grow[data-dataset="revenue-by-region"] .glabel')).map(e => e.innerText.replace(/\s+/g, ' ').trim()).join('; ')`)
	require.Equal(t, "revenue-by-region emea D; revenue-by-region americas D; revenue-by-region apac D", labels, "a row per region, in the order the definition declares them")
	require.Equal(t, "HOLD", cellOf(t, tb, "revenue-by-region|apac", "2026-01-20").Status)
	require.Equal(t, "READY", cellOf(t, tb, "revenue-by-region|emea", "2026-01-20").Status, "another region's row is not reached")
	require.Equal(t, "READY", cellOf(t, tb, "revenue-by-region|apac", "2026-01-19").Status)

	// An event redraws the cell of its region only.
	_, err = s.store.Hold(ctx, "revenue-by-region", "2026-01-25|emea", "checking")
	require.NoError(t, err)
	tb.poll(t, `window.chunklock.cell('revenue-by-region|emea', '2026-01-25')?.status === 'HOLD'`)
	require.Equal(t, "READY", cellOf(t, tb, "revenue-by-region|apac", "2026-01-25").Status)

	// A click opens the tuple's chunk.
	c := cellOf(t, tb, "revenue-by-region|apac", "2026-01-21")
	tb.do(t, chromedp.MouseClickXY(c.X, c.Y))
	tb.poll(t, `decodeURIComponent(location.hash) === '#/chunk/revenue-by-region/2026-01-21|apac'`)
}

// TestMappingByDimensionLabel: an input mapped by dimension is labelled
// with its entry, after the dimension's name, on the output's page and on
// the pipeline's edge.
func TestMappingByDimensionLabel(t *testing.T) {
	s := newStack(t, false, "roll3")
	dims := `dimensions: [{name: "date", kind: DAILY, start: "2020-01-01", end: "2020-01-10"}, {name: "region", kind: STATIC, values: ["us", "eu"]}]`
	s.must(t, "admin", `mutation { a: upsertDataset(input: {id: "sales", location: "/s/{dataid}", partitions: {`+dims+`}}) { id }
		b: upsertDataset(input: {id: "sales-3d", location: "/r/{dataid}", partitions: {`+dims+`}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertJob(input: {id: "roll3", inputs: ["sales"], output: "sales-3d",
		inputMappings: [{dataset: "sales", kind: TIME_WINDOW, startOffset: -2, dimension: "date", outputDimension: "date"}]}) { job { id } } }`, nil)
	tb := newTab(t)
	tb.do(t,
		chromedp.Navigate(s.url+"/ui#/dataset/sales-3d"),
		chromedp.WaitVisible(chromedp.CSS(`#token-input`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), s.tokens["reader"]),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
	)
	produced := tb.poll(t, `(() => { const p = document.querySelector('section.dataset[data-dataset="sales-3d"]'); return p && p.innerText.includes('produced by') && p.innerText })()`)
	require.Contains(t, produced, "sales date: -2..0 days")
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `[...document.querySelectorAll('text.edge-label')].some((e) => e.textContent.includes('date: -2..0 days'))`)
}

// TestLatestIntoDimensionsLabel: a one-dimensional snapshot read LATEST
// into a dataset with dimensions is labelled with the mapping and the
// output's other dimensions, each value of which reads it.
func TestLatestIntoDimensionsLabel(t *testing.T) {
	s := newStack(t, false, "price")
	dims := `dimensions: [{name: "date", kind: DAILY, start: "2020-01-01", end: "2020-01-10"}, {name: "region", kind: STATIC, values: ["us", "eu"]}]`
	s.must(t, "admin", `mutation { a: upsertDataset(input: {id: "rates", location: "/r/{dataid}", partitions: {kind: DAILY, start: "2020-01-01"}}) { id }
		b: upsertDataset(input: {id: "priced", location: "/p/{dataid}", partitions: {`+dims+`}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertJob(input: {id: "price", inputs: ["rates"], output: "priced",
		inputMappings: [{dataset: "rates", kind: LATEST}]}) { job { id } } }`, nil)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.poll(t, `[...document.querySelectorAll('text.edge-label')].some((e) => e.textContent === 'LATEST, each region')`)
}
