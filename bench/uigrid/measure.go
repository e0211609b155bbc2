package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// load is one page load's figures.
type load struct {
	ReadyMs  float64 // navigation to the rows in sight drawn (or the strip)
	LoadedMs float64 // navigation to every row of the view read
	Bytes    float64 // GraphQL answers received by then (JSON text)
	Requests float64
	Cells    float64
	HeapMB   float64 // renderer's JavaScript heap, used, after a collection
	bodies   []string
}

func measure(ctx context.Context, c config, srv *server) error {
	browser, err := newBrowser(ctx)
	if err != nil {
		return err
	}
	defer browser.close()
	pages := []struct{ name, url, ready string }{
		{"overview at its default view", srv.url + "/ui", "gridReadyAt"},
	}
	if c.scenario == "daily" {
		start := time.Now().UTC().AddDate(0, 0, -c.days)
		pages = append(pages, struct{ name, url, ready string }{
			fmt.Sprintf("overview of the whole %d days", c.days),
			fmt.Sprintf("%s/ui#/?zoom=DAILY&from=%s&to=%s", srv.url, start.Format(time.DateOnly), start.AddDate(0, 0, c.days-1).Format(time.DateOnly)), "gridReadyAt"})
	} else {
		pages = append(pages, struct{ name, url, ready string }{"dataset page, whole-history strip (h01)", srv.url + "/ui#/dataset/h01", "stripReadyAt"})
	}
	for _, p := range pages {
		var all []load
		for i := 0; i < c.runs; i++ {
			shot := ""
			if c.shots != "" && i == 0 {
				shot = filepath.Join(c.shots, fmt.Sprintf("uigrid-%s-%s-%d.png", c.scenario, c.store, len(all)+strings.Count(p.ready, "strip")))
			}
			l, err := browser.load(p.url, p.ready, shot)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			fmt.Printf("  %s, run %d: ready %.0f ms, all read %.0f ms, %.0f requests, %.1f KB answered, JS heap %.1f MB\n",
				p.name, i+1, l.ReadyMs, l.LoadedMs, l.Requests, l.Bytes/1024, l.HeapMB)
			all = append(all, l)
		}
		fmt.Printf("%s: median of %d: ready %.0f ms after navigation (every row read %.0f ms); %.0f requests, %.1f KB of answers; JS heap %.1f MB\n",
			p.name, c.runs, med(all, func(l load) float64 { return l.ReadyMs }), med(all, func(l load) float64 { return l.LoadedMs }),
			med(all, func(l load) float64 { return l.Requests }), med(all, func(l load) float64 { return l.Bytes })/1024, med(all, func(l load) float64 { return l.HeapMB }))
		if err := serverCPU(srv, all[0].bodies); err != nil {
			return err
		}
	}
	return scriptSizes()
}

func med(ls []load, f func(load) float64) float64 {
	v := make([]float64, len(ls))
	for i, l := range ls {
		v[i] = f(l)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// serverCPU sends each GraphQL request a page sent again, five times one
// after the other, and reports the server's CPU per request.
func serverCPU(srv *server, bodies []string) error {
	var per []time.Duration
	var worst time.Duration
	var worstBody string
	for _, b := range bodies {
		before, err := srv.cpu()
		if err != nil {
			return err
		}
		for range 5 {
			if _, err := post(srv.url, []byte(b)); err != nil {
				return fmt.Errorf("replaying a request: %w", err)
			}
		}
		after, err := srv.cpu()
		if err != nil {
			return err
		}
		d := (after - before) / 5
		per = append(per, d)
		if d > worst {
			worst, worstBody = d, b
		}
	}
	if len(per) == 0 {
		return nil
	}
	slices.Sort(per)
	fmt.Printf("  server CPU per request (its %d requests, each sent 5 times): median %s, max %s (%.70s…)\n", len(per), per[len(per)/2], worst, strings.Join(strings.Fields(worstBody), " "))
	return nil
}

func scriptSizes() error {
	for _, f := range []string{"ui/dist/dashboard.js", "ui/dist/layout.js"} {
		js, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = w.Write(js)
		_ = w.Close()
		fmt.Printf("%s: %d bytes, %d gzipped\n", f, len(js), gz.Len())
	}
	return nil
}

// browser is a headless Chromium.
type browser struct {
	ctx   context.Context
	close func()
}

func newBrowser(ctx context.Context) (*browser, error) {
	path := os.Getenv("CHUNKLOCK_CHROMIUM")
	if path == "" {
		path = "chromium"
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))...)
	bctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		cancelAlloc()
		return nil, fmt.Errorf("starting %s (set CHUNKLOCK_CHROMIUM): %w", path, err)
	}
	return &browser{ctx: bctx, close: func() { cancel(); cancelAlloc() }}, nil
}

// load opens url in a new tab, waits for window[ready], and reads the figures.
func (b *browser) load(url, ready, shot string) (load, error) {
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	var mu sync.Mutex
	var bodies []string
	if err := chromedp.Do(tab); err != nil {
		return load{}, err
	}
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && strings.HasSuffix(e.Request.URL, "/graphql") && e.Request.Method == "POST" {
			for _, p := range e.Request.PostDataEntries {
				mu.Lock()
				bodies = append(bodies, string(p.Bytes))
				mu.Unlock()
			}
		}
	}); err != nil {
		return load{}, err
	}
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		return load{}, err
	}
	ctx, stop := context.WithTimeout(tab, 5*time.Minute)
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return load{}, err
	}
	loaded := "gridLoadedAt"
	if ready == "stripReadyAt" {
		loaded = "stripReadyAt"
	}
	v, err := chromedp.Run(ctx, chromedp.Poll[load](fmt.Sprintf(`window.%s && window.%s && {ReadyMs: window.%s, LoadedMs: window.%s,
		Bytes: window.chunklock.traffic.bytes, Requests: window.chunklock.traffic.requests,
		Cells: document.querySelectorAll('.seg').length}`, ready, loaded, ready, loaded), chromedp.WithPollingTimeout(4*time.Minute)))
	if err != nil {
		return load{}, fmt.Errorf("waiting for the page: %w", err)
	}
	if _, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		return load{}, err
	}
	heap, err := chromedp.Call(ctx, runtime.GetHeapUsage, cdp.Empty{})
	if err != nil {
		return load{}, err
	}
	v.HeapMB = heap.UsedSize / (1 << 20)
	if shot != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(shot, png, 0o644)
		}
		if err != nil {
			return load{}, fmt.Errorf("screenshot: %w", err)
		}
	}
	mu.Lock()
	v.bodies = bodies
	mu.Unlock()
	return v, nil
}
