package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestDynamicDatasetMissing: the page of a DYNAMIC dataset lists as
// missing the values added and not made yet, which its runs (its chunks)
// do not hold, and not the value made.
func TestDynamicDatasetMissing(t *testing.T) {
	s := newStack(t, false, "ingest")
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "landing", location: "/in/{dataid}", partitions: {kind: DYNAMIC}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertJob(input: {id: "ingest", inputs: [], output: "landing"}) { job { id } } }`, nil)
	s.must(t, "admin", `mutation { addPartitions(dataset: "landing", dataids: ["a.csv", "b.csv", "c.csv"]) { changed } }`, nil)
	c := s.must(t, "admin", `mutation { claim(job: "ingest", dataid: "b.csv", executor: "x") { token } }`, nil)["claim"].(map[string]any)
	s.must(t, "admin", `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": c["token"]})
	tb := newTab(t)
	tb.do(t,
		chromedp.Navigate(s.url+"/ui#/dataset/landing"),
		chromedp.WaitVisible(chromedp.CSS(`#token-input`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), s.tokens["reader"]),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
	)
	tb.poll(t, `document.querySelector('section.dataset[data-dataset="landing"]') && true`)
	missing := tb.poll(t, `(() => { const m = document.querySelector('#missing-dynamic #missing'); return m && m.innerText })()`)
	require.Contains(t, missing, "a.csv")
	require.Contains(t, missing, "c.csv")
	require.NotContains(t, missing, "b.csv")
	require.Equal(t, "No late value.", eval[string](t, tb, `document.querySelector('#late-dynamic #late').innerText`))
}

// TestDynamicRowBeforeChunks: a DYNAMIC dataset with values and no chunk
// yet is drawn among the other axes as DYNAMIC ("D"), saying that its
// values are listed on its page (not that it expects none).
func TestDynamicRowBeforeChunks(t *testing.T) {
	s := newStack(t, false, "ingest")
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "landing", location: "/in/{dataid}", partitions: {kind: DYNAMIC}}) { id } }`, nil)
	s.must(t, "admin", `mutation { addPartitions(dataset: "landing", dataids: ["a.csv", "b.csv"]) { changed } }`, nil)
	tb := newTab(t)
	tb.do(t,
		chromedp.Navigate(s.url+"/ui#/"),
		chromedp.WaitVisible(chromedp.CSS(`#token-input`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), s.tokens["reader"]),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
	)
	row := tb.poll(t, `(() => { const r = document.querySelector('.other[data-ds="landing"]'); return r && !r.querySelector('.loading-bar') && r.innerText })()`)
	require.Contains(t, row, "no chunk yet: its values are listed on its page")
	require.Equal(t, "D", eval[string](t, tb, `document.querySelector('.other[data-ds="landing"] .kind').innerText`))
}
