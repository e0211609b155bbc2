package ui_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The catalog lifecycle on the dashboard (SPEC §11): pause, resume and
// delete a job from its page, delete a dataset from its page, the
// refusals with their reasons, and the catalog's history.

// confirm clicks an action's button and confirms its dialog.
func confirm(t *testing.T, tb *tab, button string) {
	t.Helper()
	tb.do(t,
		chromedp.Click(chromedp.CSS(button)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
}

// jobPaused is what the server says of a job's pause.
func (s *stack) jobPaused(t *testing.T, job string) bool {
	t.Helper()
	data := s.must(t, "reader", `query($j: String!) { job(id: $j) { paused } }`, map[string]any{"j": job})
	return data["job"].(map[string]any)["paused"].(bool)
}

// errorCode is the code of the error a query answers ("" when none).
func (s *stack) errorCode(t *testing.T, query string, vars map[string]any) string {
	t.Helper()
	_, errs := s.gql(t, "reader", query, vars)
	if len(errs) == 0 {
		return ""
	}
	return errs[0].Extensions.Code
}

// TestPauseResumeFromJobPage: an admin pauses clean from its page
// (confirming); the page, the dataset it writes, the live claims and the
// pipeline graph show it paused and the server has it paused; the job's
// history names the pause and its actor. Resuming undoes each.
func TestPauseResumeFromJobPage(t *testing.T) {
	s := newStack(t, false, "report")
	seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["admin"])
	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
	tb.poll(t, `document.querySelector('#job-actions [data-action="pause"]') && document.querySelector('#job-history table.history') && true`)
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#job-paused, .status.paused').length`))
	// The live claim's lease counts down once a second: let it tick
	// before the page is drawn again (the tick once broke the template's
	// lease cell, and the page re-rendered after the pause threw half way).
	lease := eval[string](t, tb, `document.querySelector('#job-claims td.lease, td.lease').textContent`)
	tb.poll(t, `document.querySelector('#job-claims td.lease, td.lease').textContent !== `+strconv.Quote(lease))

	confirm(t, tb, `#job-actions [data-action="pause"]`)
	tb.poll(t, `document.getElementById('job-paused') && document.querySelector('#job-actions [data-action="resume"]') && true`)
	require.True(t, s.jobPaused(t, "clean"), "the server has clean paused")
	require.Contains(t, eval[string](t, tb, `document.getElementById('job-paused-note').textContent`), "claims nothing")
	// Its history names the pause, by the admin token, newest first.
	require.Equal(t, "pauseJob admin", tb.poll(t, `(() => { const r = document.querySelector('#job-history tr[data-op]'); return r && r.dataset.op === 'pauseJob' && r.dataset.op + ' ' + r.dataset.actor })()`))

	// The dataset it writes names it paused.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/cleaned"))
	tb.poll(t, `document.querySelector('section.dataset[data-dataset="cleaned"]') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('section.dataset').innerText`), "produced by clean paused")
	// The overview: the graph's node and the live claims list.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `(document.querySelector('g.job[data-job="clean"]') || {classList: {contains: () => false}}).classList.contains('paused')`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('g.job[data-job="clean"] text.title').textContent`), "(paused)")
	require.False(t, eval[bool](t, tb, `document.querySelector('g.job[data-job="report"]').classList.contains('paused')`))
	require.Contains(t, tb.poll(t, `(() => { const r = Array.from(document.querySelectorAll('#claims tr')).find(r => r.innerText.includes('test-runner-1')); return r && r.innerText })()`), "paused")

	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
	tb.poll(t, `document.querySelector('#job-actions [data-action="resume"]') && true`)
	confirm(t, tb, `#job-actions [data-action="resume"]`)
	tb.poll(t, `!document.getElementById('job-paused') && document.querySelector('#job-actions [data-action="pause"]') && true`)
	require.False(t, s.jobPaused(t, "clean"), "the server has clean resumed")
	require.Equal(t, "resumeJob admin", tb.poll(t, `(() => { const r = document.querySelector('#job-history tr[data-op]'); return r && r.dataset.op === 'resumeJob' && r.dataset.op + ' ' + r.dataset.actor })()`))
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `document.querySelector('g.job[data-job="clean"]') && !document.querySelector('g.job[data-job="clean"]').classList.contains('paused')`)
	require.NotContains(t, eval[string](t, tb, `document.querySelector('g.job[data-job="clean"] text.title').textContent`), "paused")
}

// TestDeleteJobFromJobPage: cancelling the dialog deletes nothing; a
// delete of clean while it has a live claim is refused and the page shows
// the LOCKED refusal with the claim that holds it; once the claim is
// released the delete goes through, the page says the job is gone and
// links back to the pipeline, which no longer draws it.
func TestDeleteJobFromJobPage(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["admin"])
	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
	tb.poll(t, `document.querySelector('#job-actions [data-action="delete-job"]') && true`)

	// Cancel: nothing happens.
	tb.do(t,
		chromedp.Click(chromedp.CSS(`#job-actions [data-action="delete-job"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel`)),
		chromedp.Click(chromedp.CSS(`#cancel`)),
	)
	tb.poll(t, `!document.getElementById('confirm')`)
	require.Equal(t, "", s.errorCode(t, `{ job(id: "clean") { id } }`, nil), "cancelled: clean is still there")

	// Refused: cleaned d3 is RUNNING under a live claim of clean.
	confirm(t, tb, `#job-actions [data-action="delete-job"]`)
	refusal := tb.poll(t, `(() => { const r = document.querySelector('#job-refusal .refusal[data-code="LOCKED"]'); return r && r.innerText })()`)
	require.Contains(t, refusal, "Delete refused")
	require.Contains(t, refusal, "cleaned "+p.d[3], "the refusal names the claim that holds the job")
	require.Equal(t, 1, eval[int](t, tb, fmt.Sprintf(`document.querySelectorAll('#job-refusal .blockers a[href="#/chunk/cleaned/%s"]').length`, p.d[3])))
	require.Equal(t, "", s.errorCode(t, `{ job(id: "clean") { id } }`, nil), "refused: clean is still there")

	// The claim ends; the delete goes through.
	claims := s.must(t, "admin", `{ claims(job: "clean") { token } }`, nil)["claims"].([]any)
	require.Len(t, claims, 1)
	s.must(t, "admin", `mutation($t: String!) { release(token: $t) }`, map[string]any{"t": claims[0].(map[string]any)["token"]})
	confirm(t, tb, `#job-actions [data-action="delete-job"]`)
	gone := tb.poll(t, `(() => { const g = document.getElementById('job-gone'); return g && g.innerText })()`)
	require.Contains(t, gone, "Job clean is deleted")
	require.Equal(t, "NOT_FOUND", s.errorCode(t, `{ job(id: "clean") { id } }`, nil))
	// Its history is still there, with the delete at the top.
	require.Equal(t, "deleteJob admin", tb.poll(t, `(() => { const r = document.querySelector('#job-history tr[data-op]'); return r && r.dataset.op + ' ' + r.dataset.actor })()`))
	tb.screenshot(t, "job-gone")

	tb.do(t, chromedp.Click(chromedp.CSS(`#job-gone a#back`)))
	tb.poll(t, `location.hash === '#/' && document.querySelector('g.job[data-job="report"]') && !document.querySelector('g.job[data-job="clean"]')`)
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && true`)
	require.Equal(t, "READY", cellStatus(t, tb, "cleaned", p.d[0]), "the chunks clean produced stay")
}

// TestDeleteDatasetFromDatasetPage: deleting summary while report writes
// it is refused with the server's reason; once report is deleted, the
// delete asks again naming the chunk it would delete, goes nowhere until
// that is ticked, and then deletes the dataset.
func TestDeleteDatasetFromDatasetPage(t *testing.T) {
	s := newStack(t, false, "report")
	seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["admin"])
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/summary"))
	tb.poll(t, `document.querySelector('[data-action="delete-dataset"]') && true`)

	confirm(t, tb, `[data-action="delete-dataset"]`)
	refusal := tb.poll(t, `(() => { const r = document.querySelector('#dataset-refusal .refusal[data-code="LOCKED"]'); return r && r.innerText })()`)
	require.Contains(t, refusal, `job "report" writes it`)
	require.Equal(t, "", s.errorCode(t, `{ dataset(id: "summary") { id } }`, nil))

	// report goes (another admin, elsewhere); summary keeps its one chunk.
	s.must(t, "admin", `mutation { deleteJob(id: "report") }`, nil)
	confirm(t, tb, `[data-action="delete-dataset"]`)
	tb.poll(t, `(document.getElementById('delete-chunk-count') || {}).textContent === '1 chunk'`)
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#dataset-refusal .refusal').length`), "the first refusal is cleared")
	tb.screenshot(t, "dataset-delete-dialog")
	// Not ticked: the dialog stays, nothing is deleted.
	tb.do(t, chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	require.True(t, eval[bool](t, tb, `!!document.getElementById('delete-chunks')`))
	require.Equal(t, "", s.errorCode(t, `{ dataset(id: "summary") { id } }`, nil))
	tb.do(t,
		chromedp.Click(chromedp.CSS(`#delete-chunks`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	gone := tb.poll(t, `(() => { const g = document.getElementById('dataset-gone'); return g && g.innerText })()`)
	require.Contains(t, gone, "Dataset summary is deleted")
	require.Equal(t, "NOT_FOUND", s.errorCode(t, `{ dataset(id: "summary") { id } }`, nil))
	require.Equal(t, "deleteDataset admin", tb.poll(t, `(() => { const r = document.querySelector('#dataset-history tr[data-op]'); return r && r.dataset.op + ' ' + r.dataset.actor })()`))
	tb.do(t, chromedp.Click(chromedp.CSS(`#dataset-gone a#back`)))
	tb.poll(t, `location.hash === '#/' && document.querySelector('g.dataset[data-dataset="cleaned"]') && !document.querySelector('g.dataset[data-dataset="summary"]')`)
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && document.querySelector('.grow[data-ds="cleaned"]') && !document.querySelector('.grow[data-ds="summary"]')`)
	// A dataset declared after the page read the catalog has its page.
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "summary2"}) { id } }`, nil)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/summary2"))
	tb.poll(t, `document.querySelector('section.dataset[data-dataset="summary2"]') && true`)
}

// TestCatalogHistoryPage: the history page, reached from the navigation,
// lists the changes made through the API newest first with their actor
// and the value before, 100 a page: the older page ends with the first
// change; the filters by job and actor keep only theirs.
func TestCatalogHistoryPage(t *testing.T) {
	s := newStack(t, false, "report")
	seedPipeline(t, s, "admin") // 5 changes: raw, cleaned, summary, clean, report
	for range 60 {
		s.must(t, "admin", `mutation { a: pauseJob(id: "report") { id } b: resumeJob(id: "report") { id } }`, nil)
	}
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.do(t, chromedp.Click(chromedp.CSS(`#nav-history`)))
	tb.poll(t, `document.querySelector('#history-host table.history[data-rows="100"]') && true`)
	row := func(i string) map[string]string {
		return eval[map[string]string](t, tb, `(() => { const rs = document.querySelectorAll('#history-host tr[data-op]'); const r = rs[`+i+`]; return {op: r.dataset.op, actor: r.dataset.actor, id: r.dataset.id, text: r.innerText}; })()`)
	}
	first := row("0")
	require.Equal(t, "resumeJob", first["op"])
	require.Equal(t, "admin", first["actor"])
	require.Equal(t, "report", first["id"])
	require.Contains(t, first["text"], "paused: true", "the value before the resume")
	require.Equal(t, "pauseJob", row("1")["op"])
	require.Contains(t, row("1")["text"], "paused: false")
	tb.screenshot(t, "history")

	tb.do(t, chromedp.Click(chromedp.CSS(`#history-host .history-older`)))
	tb.poll(t, `document.querySelector('#history-host table.history[data-page="2"][data-rows="25"]') && true`)
	last := row("rs.length - 1")
	require.Equal(t, map[string]string{"op": "upsertDataset", "actor": "admin", "id": "raw"}, map[string]string{"op": last["op"], "actor": last["actor"], "id": last["id"]})
	require.Contains(t, last["text"], "created")
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#history-host .history-older').length`), "the last page has no older one")
	tb.do(t, chromedp.Click(chromedp.CSS(`#history-host .history-newer`)))
	tb.poll(t, `document.querySelector('#history-host table.history[data-page="1"][data-rows="100"]') && true`)

	// Filtered by job: clean's one change.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/history?job=clean"))
	tb.poll(t, `document.querySelector('#history-host table.history[data-rows="1"]') && true`)
	require.Equal(t, "upsertJob admin clean", eval[string](t, tb, `(() => { const r = document.querySelector('#history-host tr[data-op]'); return r.dataset.op + ' ' + r.dataset.actor + ' ' + r.dataset.id })()`))
	require.Equal(t, "clean", eval[string](t, tb, `document.querySelector('#history-filter [name=job]').value`))
	// By an actor that changed nothing.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/history?actor=reader"))
	require.Contains(t, tb.poll(t, `(() => { const e = document.querySelector('#history-host .history-empty'); return e && e.textContent })()`), "by reader")
}

// TestReaderSeesNoLifecycleActions: the admin's job and dataset pages
// offer pause, delete and delete dataset; a reader's offer none, and
// still show the history.
func TestReaderSeesNoLifecycleActions(t *testing.T) {
	actions := `Array.from(document.querySelectorAll('[data-action="pause"], [data-action="resume"], [data-action="delete-job"], [data-action="delete-dataset"]')).map(b => b.dataset.action).join(' ')`
	for _, c := range []struct{ role, job, dataset string }{
		{"admin", "pause delete-job", "delete-dataset"},
		{"reader", "", ""},
		{"runner", "", ""},
	} {
		// A server of its own: the browser keeps one token per origin.
		s := newStack(t, false, "report")
		seedPipeline(t, s, "admin")
		tb := newTab(t)
		signIn(t, tb, s, s.tokens[c.role])
		tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
		tb.poll(t, `document.querySelector('#job-history table.history') && true`)
		require.Equal(t, c.job, eval[string](t, tb, actions), "%s on the job page", c.role)
		tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/cleaned"))
		tb.poll(t, `document.querySelector('#dataset-history table.history') && true`)
		require.Equal(t, c.dataset, eval[string](t, tb, actions), "%s on the dataset page", c.role)
		require.True(t, strings.Contains(eval[string](t, tb, `document.querySelector('#dataset-history').innerText`), "upsertDataset"), "%s sees the history", c.role)
	}
}

// TestLifecycleOnQuickStart: the lifecycle pages on the README's quick
// start, with screenshots (CHUNKLOCK_SCREENSHOTS): report's page with a
// live claim, then paused with its delete refused; the pipeline with
// report paused; weekly-report's page asking to delete its chunks once
// weekly is deleted; and the history of it all.
func TestLifecycleOnQuickStart(t *testing.T) {
	s := newStack(t, false, "extract")
	seedQuickStart(t, s, "report/2026-01-29")
	// An admin raises report's lease through the API: a change with a before.
	s.must(t, "admin", `mutation { upsertJob(input: {id: "report", description: "write the day's revenue report", inputs: ["orders-clean"], output: "daily-report", env: [{name: "CURRENCY", value: "EUR"}], leaseSeconds: 90}) { job { id } } }`, nil)
	tb := newTab(t)
	openOverview(t, tb, s, "admin")

	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/report"))
	tb.poll(t, `document.querySelector('#job-history table.history') && document.querySelector('#job-actions [data-action="pause"]') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('#job-history tr[data-op="upsertJob"]').innerText`), "leaseSeconds: 30", "the history shows the lease before the change")
	tb.screenshot(t, "quickstart-job")

	confirm(t, tb, `#job-actions [data-action="pause"]`)
	tb.poll(t, `document.getElementById('job-paused') && true`)
	// Now the page knows what the upsert left (the value the pause
	// started from): its row names the fields it set, the lease and the
	// job's key (the upsert through the API gave it one).
	require.Equal(t, "leaseSeconds: 30, key: (none)", tb.poll(t, `(() => { const s = document.querySelector('#job-history tr[data-op="upsertJob"] td.before summary'); return document.querySelector('#job-history tr[data-op="pauseJob"]') && s && s.textContent })()`))
	require.Contains(t, eval[string](t, tb, `document.querySelector('#job-history tr[data-op="pauseJob"] pre').textContent`), `"public": "age`)
	confirm(t, tb, `#job-actions [data-action="delete-job"]`)
	require.Contains(t, tb.poll(t, `(() => { const r = document.querySelector('#job-refusal .refusal'); return r && r.innerText })()`), "daily-report 2026-01-29")
	tb.screenshot(t, "quickstart-job-paused")

	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && (document.querySelector('g.job[data-job="report"]') || {classList: {contains: () => false}}).classList.contains('paused')`)
	tb.screenshot(t, "quickstart-overview-paused")

	s.must(t, "admin", `mutation { deleteJob(id: "weekly") }`, nil)
	weeks := s.must(t, "reader", `{ partitionRuns(dataset: "weekly-report") { runs { status count } } }`, nil)["partitionRuns"].(map[string]any)["runs"].([]any)
	ready := 0
	for _, r := range weeks {
		if r := r.(map[string]any); r["status"] != "NONE" {
			ready += int(r["count"].(float64))
		}
	}
	require.Positive(t, ready)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/weekly-report"))
	tb.poll(t, `window.stripReadyAt && document.querySelector('[data-action="delete-dataset"]') && true`)
	confirm(t, tb, `[data-action="delete-dataset"]`)
	require.Equal(t, fmt.Sprintf("%d chunks", ready), tb.poll(t, `(document.getElementById('delete-chunk-count') || {}).textContent`))
	tb.screenshot(t, "quickstart-dataset-delete")
	tb.do(t, chromedp.Click(chromedp.CSS(`#cancel`)))

	tb.do(t, chromedp.Click(chromedp.CSS(`#nav-history`)))
	tb.poll(t, `document.querySelector('#history-host table.history') && true`)
	ops := eval[string](t, tb, `Array.from(document.querySelectorAll('#history-host tr[data-op]')).slice(0, 3).map(r => r.dataset.op + ' ' + r.dataset.id + ' ' + r.dataset.actor).join(', ')`)
	require.Equal(t, "deleteJob weekly admin, pauseJob report admin, upsertJob report admin", ops)
	tb.screenshot(t, "quickstart-history")
}

// TestCatalogChangedElsewhere: a pause and a delete made through the API
// (another admin, the CLI) come with no event; the next view the page
// shows reads the catalog again, so the graph draws clean paused, then
// report gone, without a reload.
func TestCatalogChangedElsewhere(t *testing.T) {
	s := newStack(t, false, "report")
	seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	eval[bool](t, tb, `window.__sameLoad = true`)
	require.False(t, eval[bool](t, tb, `document.querySelector('g.job[data-job="clean"]').classList.contains('paused')`))

	s.must(t, "admin", `mutation { pauseJob(id: "clean") { id } }`, nil)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/raw"))
	require.Contains(t, tb.poll(t, `(() => { const s = document.querySelector('section.dataset[data-dataset="raw"]'); return s && s.innerText })()`), "read by clean paused")
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `(document.querySelector('g.job[data-job="clean"]') || {classList: {contains: () => false}}).classList.contains('paused')`)

	s.must(t, "admin", `mutation { deleteJob(id: "report") }`, nil)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/history"))
	tb.poll(t, `document.querySelector('#history-host tr[data-op="deleteJob"]') && true`)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/"))
	tb.poll(t, `document.querySelector('g.job[data-job="clean"]') && !document.querySelector('g.job[data-job="report"]')`)
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}

// TestCatalogHistoryOfValues: the history page spells an addPartitions and
// a removePartitions as the values they changed (their records hold the
// change), and a dataset's own change after them is still compared with
// the dataset's value, not with such a record.
func TestCatalogHistoryOfValues(t *testing.T) {
	s := newStack(t, false, "none")
	ctx := t.Context()
	_, err := s.store.UpsertDataset(ctx, backends.Dataset{ID: "days", Location: "/d/{dataid}", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}})
	require.NoError(t, err) // the grid has a row: the sign-in waits for it
	files := func(location string) {
		_, err := s.store.UpsertDataset(ctx, backends.Dataset{ID: "files", Location: location, Partitions: &partition.Def{Kind: partition.Dynamic}})
		require.NoError(t, err)
	}
	files("/f/{dataid}")
	files("/files/{dataid}")
	_, err = s.store.AddPartitions(ctx, "files", []string{"a.csv", "b.csv"}, "", "")
	require.NoError(t, err)
	_, err = s.store.RemovePartitions(ctx, "files", []string{"b.csv"}, "")
	require.NoError(t, err)
	files("/g/{dataid}")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.do(t, chromedp.Click(chromedp.CSS(`#nav-history`)))
	tb.poll(t, `document.querySelector('#history-host table.history') && true`)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/history?dataset=files"))
	tb.poll(t, `document.querySelector('#history-host table.history[data-rows="5"]') && true`)
	rows := eval[[]string](t, tb, `Array.from(document.querySelectorAll('#history-host tr[data-op]')).map(r => r.dataset.op + ': ' + r.querySelector('td.before').innerText.trim())`)
	require.Equal(t, "removePartitions: removed 1 value (b.csv)", rows[1])
	require.Equal(t, "addPartitions: added 2 values (a.csv, b.csv)", rows[2])
	require.Equal(t, `upsertDataset: location: /f/{dataid}`, rows[3], "the change compared with the dataset's value it left, past the values changed since")
	tb.screenshot(t, "history-values")
}
