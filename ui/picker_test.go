package ui_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// seedDimensions declares the README's DYNAMIC-dimension example in
// January 2026, and a dataset of three dimensions beside it:
//
//   - orders: date × customer (DYNAMIC), acme and beta expected from
//     2026-01-01, globex from 2026-01-10 and initech from 2026-01-20, all
//     made up to the end of January but beta's last six days (missing,
//     late: beta is behind);
//   - sales: date × region (eu, us, apac) × product (p1, p2, p10), all
//     READY but 2026-01-15|eu|p2, held;
//   - revenue: a day of the customers' total (job total), made for every
//     day all its customers are READY.
func seedDimensions(t *testing.T, s *stack) {
	t.Helper()
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "orders", location: "/orders/{customer}/dt={date}", partitions: {deadlineSeconds: 21600, dimensions: [
		{name: "date", kind: DAILY, start: "2026-01-01", end: "2026-01-31"}, {name: "customer", kind: DYNAMIC}]}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "sales", location: "/sales/{region}/{product}/dt={date}", partitions: {dimensions: [
		{name: "date", kind: DAILY, start: "2026-01-01", end: "2026-01-31"}, {name: "region", kind: STATIC, values: ["eu", "us", "apac"]},
		{name: "product", kind: STATIC, values: ["p1", "p2", "p10"]}]}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "revenue", location: "/revenue/dt={dataid}", partitions: {kind: DAILY, start: "2026-01-01", end: "2026-01-31"}}) { id } }`, nil)
	s.must(t, "admin", `mutation { upsertJob(input: {id: "total", inputs: ["orders"], output: "revenue"}) { job { id } } }`, nil)
	for _, add := range []struct{ from, values string }{{"2026-01-01", `["acme", "beta"]`}, {"2026-01-10", `["globex"]`}, {"2026-01-20", `["initech"]`}} {
		s.must(t, "admin", fmt.Sprintf(`mutation { addPartitions(dataset: "orders", dataids: %s, dimension: "customer", from: %q) { changed } }`, add.values, add.from), nil)
	}
	for _, p := range []struct{ customer, from, to string }{{"acme", "2026-01-01", "2026-01-31"}, {"beta", "2026-01-01", "2026-01-25"}, {"globex", "2026-01-10", "2026-01-31"}, {"initech", "2026-01-20", "2026-01-31"}} {
		s.must(t, "admin", fmt.Sprintf(`mutation { publishRange(dataset: "orders", from: %q, to: %q, slice: [{dimension: "customer", values: [%q]}]) { changed } }`, p.from, p.to, p.customer), nil)
	}
	s.must(t, "admin", `mutation { publishRange(dataset: "sales", from: "2026-01-01", to: "2026-01-31") { changed } }`, nil)
	_, err := s.store.Hold(t.Context(), "sales", "2026-01-15|eu|p2", "checking")
	require.NoError(t, err)
	for {
		c, err := s.store.FindNext(t.Context(), "total", "runner-1")
		require.NoError(t, err)
		if c == nil {
			break
		}
		require.NoError(t, s.store.Complete(t.Context(), c.Token))
	}
}

// rowLabels are the labels of a dataset's rows on the time axis, in order.
func rowLabels(t *testing.T, tb *tab, ds string) string {
	t.Helper()
	return eval[string](t, tb, fmt.Sprintf(`Array.from(document.querySelectorAll('.grow[data-dataset=%q] .glabel')).map(e => e.innerText.replace(/\s+/g, ' ').trim()).join('; ')`, ds))
}

// choose sets a select (or value box) of a dataset's picker as a user does, and fires its change.
func choose(t *testing.T, tb *tab, ds, sel, value string) {
	t.Helper()
	tb.poll(t, fmt.Sprintf(`document.querySelector('.gpick[data-pick=%q] %s') && true`, ds, sel))
	eval[bool](t, tb, fmt.Sprintf(`(() => { const s = document.querySelector('.gpick[data-pick=%q] %s'); s.value = %q; s.dispatchEvent(new Event('change', {bubbles: true})); return true })()`, ds, sel, value))
}

// TestDimensionsDynamicRows: the README's orders (date × customer, a
// DYNAMIC dimension) on the time axis with a row per customer, even with
// no one-axis dataset beside it: each customer's cells from the day it is
// expected, those before drawn as not expected (nothing, as before a
// definition's start), not missing; beta's last days missing and late; an
// event redraws its customer's cell; the pipeline node sums the rows.
func TestDimensionsDynamicRows(t *testing.T) {
	s := newStack(t, false, "total")
	seedDimensions(t, s)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="orders"]').length === 4`)
	require.Equal(t, "orders acme D; orders beta D; orders globex D; orders initech D", rowLabels(t, tb, "orders"), "a row per customer, in dataid order")
	require.Zero(t, eval[int](t, tb, `document.querySelectorAll('.grow.other[data-ds="orders"]').length`), "not among the other axes")

	require.Equal(t, "READY", cellOf(t, tb, "orders|acme", "2026-01-05").Status)
	require.Equal(t, "READY", cellOf(t, tb, "orders|globex", "2026-01-10").Status)
	before := cellOf(t, tb, "orders|globex", "2026-01-09")
	require.Equal(t, "", before.Status, "before globex is expected: nothing (%s)", before.Text)
	require.Contains(t, before.Text, "nothing expected")
	require.NotContains(t, underCell(t, tb, "orders|globex", "2026-01-05"), "seg", "nothing is drawn where globex is not expected")
	require.Equal(t, "", cellOf(t, tb, "orders|initech", "2026-01-19").Status)
	require.Equal(t, "READY", cellOf(t, tb, "orders|initech", "2026-01-20").Status)
	late := cellOf(t, tb, "orders|beta", "2026-01-28")
	require.Equal(t, "NONE", late.Status)
	require.True(t, late.Late)
	// The hover says from when the value is expected, once the members are read.
	tb.poll(t, `(window.chunklock.cell('orders|globex', '2026-01-09') || {text: ''}).text.includes('customer globex is expected from 2026-01-10')`)

	// The pipeline's node sums the rows: beta's six missing days.
	tb.poll(t, `(document.querySelector('g.dataset[data-dataset="orders"] .sub') || {textContent: ''}).textContent.includes('6 late')`)

	// An event redraws its customer's cell, no other.
	_, err := s.store.Publish(t.Context(), "orders", "2026-01-28|beta")
	require.NoError(t, err)
	waitCell(t, tb, "orders|beta", "2026-01-28", "READY")
	require.Equal(t, "NONE", cellStatus(t, tb, "orders|beta", "2026-01-27"))
	tb.screenshot(t, "dimensions-overview")
}

// TestDimensionsPicker: sales (date × region × product) gets a row per
// region with product fixed to its first value; its picker fixes product
// to another value, gives the rows to product instead, or draws one slice;
// the choice survives a reload; an event reaches the row of its tuple;
// shift-click selects no range on a sliced row.
func TestDimensionsPicker(t *testing.T) {
	s := newStack(t, false, "total")
	seedDimensions(t, s)
	tb := newTab(t)
	openOverview(t, tb, s, "admin")
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="sales"]').length === 3`)
	require.Equal(t, "sales eu D; sales us D; sales apac D", rowLabels(t, tb, "sales"))
	require.Equal(t, "READY", cellStatus(t, tb, "sales|eu|p1", "2026-01-15"), "product fixed to p1, its first value")
	require.Equal(t, "sales 2026-01-15|eu|p1: READY", cellOf(t, tb, "sales|eu|p1", "2026-01-15").Text)

	// Fix product to p2: the held day shows on eu's row.
	choose(t, tb, "sales", `select.pick-at[data-dim="product"]`, "p2")
	tb.poll(t, `(window.chunklock.cell('sales|eu|p2', '2026-01-15') || {}).status === 'HOLD'`)
	require.Equal(t, "READY", cellStatus(t, tb, "sales|us|p2", "2026-01-15"))
	require.Equal(t, "absent", cellStatus(t, tb, "sales|eu|p1", "2026-01-15"), "p1's rows are gone")

	// Rows by product, region fixed to eu (its first value).
	choose(t, tb, "sales", `select.pick-by`, "product")
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="sales"]').length === 3 && !!window.chunklock.cell('sales|eu|p10', '2026-01-15')`)
	require.Equal(t, "sales p1 D; sales p2 D; sales p10 D", rowLabels(t, tb, "sales"))
	choose(t, tb, "sales", `select.pick-at[data-dim="region"]`, "apac")
	tb.poll(t, `!!window.chunklock.cell('sales|apac|p2', '2026-01-15')`)
	require.Equal(t, "READY", cellStatus(t, tb, "sales|apac|p2", "2026-01-15"))
	choose(t, tb, "sales", `select.pick-at[data-dim="region"]`, "eu")
	tb.poll(t, `!!window.chunklock.cell('sales|eu|p2', '2026-01-15')`)

	// One slice: a single row, every dimension fixed.
	choose(t, tb, "sales", `select.pick-by`, "")
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="sales"]').length === 1`)
	require.Equal(t, "sales eu · p2 D", rowLabels(t, tb, "sales"))
	waitCell(t, tb, "sales|eu|p2", "2026-01-15", "HOLD")
	require.Contains(t, eval[string](t, tb, `location.hash`), "by.sales=-")

	// The choice survives a reload.
	tb.do(t, chromedp.Reload())
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && document.querySelectorAll('.grow[data-dataset="sales"]').length === 1`)
	require.Equal(t, "sales eu · p2 D", rowLabels(t, tb, "sales"))
	require.Equal(t, "", eval[string](t, tb, `document.querySelector('.gpick[data-pick="sales"] select.pick-by').value`), "the picker shows one slice")
	require.Equal(t, "p2", eval[string](t, tb, `document.querySelector('.gpick[data-pick="sales"] select.pick-at[data-dim="product"]').value`))

	// An event of the row's tuple redraws it; another tuple's does not reach it.
	for _, id := range []string{"2026-01-20|eu|p2", "2026-01-21|eu|p1"} {
		_, err := s.store.Hold(t.Context(), "sales", id, "checking")
		require.NoError(t, err)
	}
	waitCell(t, tb, "sales|eu|p2", "2026-01-20", "HOLD")
	require.Equal(t, "READY", cellStatus(t, tb, "sales|eu|p2", "2026-01-21"))

	// Shift-click on a sliced row opens its chunk rather than selecting a range.
	c := cellOf(t, tb, "sales|eu|p2", "2026-01-22")
	eval[bool](t, tb, fmt.Sprintf(`document.elementFromPoint(%f, %f).dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true, clientX: %f, clientY: %f}))`, c.X, c.Y, c.X, c.Y))
	tb.poll(t, `decodeURIComponent(location.hash) === '#/chunk/sales/2026-01-22|eu|p2'`)
	tb.do(t, chromedp.NavigateBack())
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && document.querySelectorAll('.grow[data-dataset="sales"]').length === 1`)
	tb.screenshot(t, "dimensions-picker")
}

// TestDimensionsManyValues: a DYNAMIC dimension of 1,000 customers gets
// 24 rows: the three behind first (valueSummaries), then the others in
// shortlex order, the rest counted ("+976 more values of customer not drawn: type to
// filter"); the filter box narrows them by substring, the behind first.
func TestDimensionsManyValues(t *testing.T) {
	s := newStack(t, false, "total")
	s.must(t, "admin", `mutation { upsertDataset(input: {id: "feeds", location: "/f/{customer}/{date}", partitions: {deadlineSeconds: 3600, dimensions: [
		{name: "date", kind: DAILY, start: "2026-01-01", end: "2026-01-07"}, {name: "customer", kind: DYNAMIC}]}}) { id } }`, nil)
	var all, made []string
	for i := 1; i <= 1000; i++ {
		c := fmt.Sprintf("c%04d", i)
		all = append(all, fmt.Sprintf("%q", c))
		if i != 500 && i != 777 && i != 999 {
			made = append(made, fmt.Sprintf("%q", c))
		}
	}
	s.must(t, "admin", fmt.Sprintf(`mutation { addPartitions(dataset: "feeds", dataids: [%s], dimension: "customer", from: "2026-01-01") { changed } }`, strings.Join(all, ",")), nil)
	s.must(t, "admin", fmt.Sprintf(`mutation { publishRange(dataset: "feeds", from: "2026-01-01", to: "2026-01-07", slice: [{dimension: "customer", values: [%s]}]) { changed } }`, strings.Join(made, ",")), nil)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="feeds"]').length === 24`)
	labels := strings.Split(rowLabels(t, tb, "feeds"), "; ")
	require.Equal(t, []string{"feeds c0500 D", "feeds c0777 D", "feeds c0999 D", "feeds c0001 D", "feeds c0002 D"}, labels[:5], "the behind first, then shortlex")
	require.Equal(t, "feeds c0021 D", labels[23])
	require.Equal(t, "NONE", cellStatus(t, tb, "feeds|c0777", "2026-01-03"))
	require.Equal(t, "READY", cellStatus(t, tb, "feeds|c0001", "2026-01-03"))
	note := eval[string](t, tb, `document.querySelector('.gpick[data-pick="feeds"] .pick-note').innerText`)
	require.Contains(t, note, "+976 more values of customer not drawn: type to filter")
	require.Contains(t, note, "3 behind")
	require.Equal(t, 3, eval[int](t, tb, `document.querySelectorAll('.grow[data-dataset="feeds"] .slice.behind').length`), "the behind rows are marked")
	tb.screenshot(t, "dimensions-many-values")

	// Type to filter: c09 matches c0900..c0999, the behind c0999 first.
	tb.do(t, chromedp.SendKeys(chromedp.CSS(`.gpick[data-pick="feeds"] input.pick-filter`), "c09"))
	tb.poll(t, `(document.querySelector('.grow[data-dataset="feeds"] .glabel') || {innerText: ''}).innerText.includes('c0999')`)
	labels = strings.Split(rowLabels(t, tb, "feeds"), "; ")
	require.Len(t, labels, 24)
	require.Equal(t, []string{"feeds c0999 D", "feeds c0900 D", "feeds c0901 D"}, labels[:3])
	require.Contains(t, eval[string](t, tb, `document.querySelector('.gpick[data-pick="feeds"] .pick-note').innerText`), "100 of 1,000 values of customer match: +76 not drawn")
	tb.do(t, chromedp.SendKeys(chromedp.CSS(`.gpick[data-pick="feeds"] input.pick-filter`), "77"))
	tb.poll(t, `document.querySelectorAll('.grow[data-dataset="feeds"]').length === 1`)
	require.Equal(t, "feeds c0977 D", rowLabels(t, tb, "feeds"))
	waitCell(t, tb, "feeds|c0977", "2026-01-02", "READY")
	tb.screenshot(t, "dimensions-many-values-filtered")
}

// TestDimensionsDatasetBehind: a dataset page describes its DYNAMIC
// dimension (its values, from when they are expected) and lists, per
// STATIC or DYNAMIC dimension, the values behind with their counts and a
// link to the oldest missing chunk, or says none is.
func TestDimensionsDatasetBehind(t *testing.T) {
	s := newStack(t, false, "total")
	seedDimensions(t, s)
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/orders"))
	tb.poll(t, `document.querySelector('section.dataset[data-dataset="orders"]') && true`)
	def := tb.poll(t, `(() => { const p = document.querySelector('#definition'); return p && p.innerText.includes('expected from') && p.innerText })()`)
	require.Contains(t, def, "customer: DYNAMIC, 4 values (acme, beta, globex, initech)")
	require.Contains(t, def, "expected from 2026-01-01 (globex from 2026-01-10, initech from 2026-01-20)")
	require.Equal(t, 1, strings.Count(def, "one chunk per"), "drawn once: %s", def)
	behind := tb.poll(t, `(() => { const b = document.querySelector('#behind-customer'); return b && b.innerText })()`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('#behind').innerText`), "Behind by customer")
	require.Contains(t, behind, "beta")
	require.NotContains(t, behind, "acme")
	row := eval[string](t, tb, `document.querySelector('#behind-customer tr[data-value="beta"]').innerText.replace(/\s+/g, ' ').trim()`)
	require.Equal(t, "beta from 2026-01-01 6 6 2026-01-26|beta 2026-01-26|beta", row)
	tb.screenshot(t, "dimensions-dataset-orders")
	tb.do(t, chromedp.Click(chromedp.CSS(`#behind-customer tr[data-value="beta"] td:nth-child(4) a`)))
	tb.poll(t, `decodeURIComponent(location.hash) === '#/chunk/orders/2026-01-26|beta'`)
	// Its page names what waits on it: the day's total, across customers.
	waits := tb.poll(t, `(() => { const w = document.querySelector('#waits'); return w && w.innerText })()`)
	require.Contains(t, waits, "revenue 2026-01-26")

	// sales: nothing missing (no deadline: the held day is not late).
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/sales"))
	tb.poll(t, `document.querySelector('#behind-region') && document.querySelector('#behind-product') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('#behind-region').innerText`), "none behind")
	require.Contains(t, eval[string](t, tb, `document.querySelector('#behind').innerText`), "Behind by product")
	require.Contains(t, eval[string](t, tb, `document.querySelector('#definition').innerText`), "region: eu, us, apac")
	tb.screenshot(t, "dimensions-dataset-sales")
}

// scrollTo scrolls the grid until the row of key is in the page.
func scrollTo(t *testing.T, tb *tab, key string) {
	t.Helper()
	tb.poll(t, fmt.Sprintf(`(() => {
		if (document.querySelector('.grow[data-ds=%q]')) return true;
		const b = document.getElementById('grid-body');
		b.scrollTop += 200;
		return false;
	})()`, key))
}

// TestDimensionsRequestsWithinCost: twelve datasets of a date and 30
// customers each, one behind and one expected from later: the picker's
// reads (the values behind, three datasets a request; the DYNAMIC values'
// expectedFrom, eight a request) and the rows' fit the server's default
// --max-complexity: every dataset's behind value comes first, and the hover
// of the last batch's datasets says from when a value is expected.
func TestDimensionsRequestsWithinCost(t *testing.T) {
	s := newStack(t, false, "total")
	var customers []string
	for i := 1; i <= 30; i++ {
		if i != 2 {
			customers = append(customers, fmt.Sprintf("%q", fmt.Sprintf("c%02d", i)))
		}
	}
	for n := 1; n <= 12; n++ {
		ds := fmt.Sprintf("d%02d", n)
		s.must(t, "admin", fmt.Sprintf(`mutation { upsertDataset(input: {id: %q, location: "/x/{customer}/{date}", partitions: {dimensions: [
			{name: "date", kind: DAILY, start: "2026-01-01", end: "2026-01-10"}, {name: "customer", kind: DYNAMIC}]}}) { id } }`, ds), nil)
		s.must(t, "admin", fmt.Sprintf(`mutation { addPartitions(dataset: %q, dataids: [%s], dimension: "customer", from: "2026-01-01") { changed } }`, ds, strings.Join(customers, ",")), nil)
		s.must(t, "admin", fmt.Sprintf(`mutation { addPartitions(dataset: %q, dataids: ["c02"], dimension: "customer", from: "2026-01-05") { changed } }`, ds), nil)
		made := strings.ReplaceAll(strings.Join(customers, ","), `"c07",`, "")
		s.must(t, "admin", fmt.Sprintf(`mutation { publishRange(dataset: %q, from: "2026-01-01", to: "2026-01-10", slice: [{dimension: "customer", values: [%s, "c02"]}]) { changed } }`, ds, made), nil)
	}
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	for _, ds := range []string{"d01", "d08", "d09", "d12"} {
		scrollTo(t, tb, ds+"|c07")
		tb.poll(t, fmt.Sprintf(`(() => { const r = document.querySelector('.grow[data-dataset=%q] .glabel'); return r && r.innerText.includes('c07') })()`, ds))
		waitCell(t, tb, ds+"|c07", "2026-01-03", "NONE")
		scrollTo(t, tb, ds+"|c02")
		tb.poll(t, fmt.Sprintf(`(window.chunklock.cell(%q, '2026-01-03') || {text: ''}).text.includes('customer c02 is expected from 2026-01-05')`, ds+"|c02"))
		require.Equal(t, "READY", cellStatus(t, tb, ds+"|c02", "2026-01-05"))
	}
	require.Zero(t, eval[int](t, tb, `document.querySelectorAll('.grow .track .error').length`), "no request was refused")
}
