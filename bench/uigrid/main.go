// Command uigrid measures the dashboard in headless Chromium against a real
// `chunklock serve` on a free port of 127.0.0.1: from navigation to the
// grid drawn (the rows in sight), median of -runs loads, plus what the page
// received, its JavaScript heap, and the server's CPU per request the page
// sent. Two scenarios:
//
//	daily   -datasets N daily datasets over -days days (half sources, half
//	        produced by a job each), seeded through the API, on the
//	        embedded store. The page opens at its default view, and at the
//	        whole range (-days columns) as the earlier dashboard did.
//	hourly  -datasets N hourly datasets over -years years (mostly READY, some
//	        missing, failed, held and late), written in bulk straight into
//	        the store's tables (PostgreSQL: COPY; embedded: the etcd
//	        backend's own writes, before the server starts). Measures the
//	        overview at its default zoom and a dataset page's whole-history
//	        strip.
//
// Run from the repository root:
//
//	go run ./bench/uigrid [-scenario daily] [-datasets 50] [-days 365] [-runs 5]
//	go run ./bench/uigrid -scenario hourly -store postgres [-dsn URL] [-datasets 50] [-years 10]
//	go run ./bench/uigrid -scenario hourly -store embedded
//
// It needs Debian's chromium (scripts/browser.sh) or CHUNKLOCK_CHROMIUM, and
// for -store postgres a database (-dsn, default CHUNKLOCK_TEST_POSTGRES);
// it creates a schema of its own there and drops it at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

type config struct {
	scenario string
	store    string
	dsn      string
	datasets int
	days     int
	years    int
	runs     int
	keep     bool
	shots    string
}

func main() {
	var c config
	flag.StringVar(&c.scenario, "scenario", "daily", "daily or hourly")
	flag.StringVar(&c.store, "store", "embedded", "embedded or postgres")
	flag.StringVar(&c.dsn, "dsn", os.Getenv("CHUNKLOCK_TEST_POSTGRES"), "PostgreSQL URL for -store postgres")
	flag.IntVar(&c.datasets, "datasets", 50, "datasets")
	flag.IntVar(&c.days, "days", 365, "days per dataset (daily)")
	flag.IntVar(&c.years, "years", 10, "years of hours per dataset (hourly)")
	flag.IntVar(&c.runs, "runs", 5, "page loads to take the median of")
	flag.BoolVar(&c.keep, "keep", false, "keep the server running at the end, to look at the page (Ctrl-C ends it)")
	flag.StringVar(&c.shots, "screenshots", "", "a directory to write a screenshot of each page into (its first load)")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "uigrid:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	tmp, err := os.MkdirTemp("", "chunklock-uigrid-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := build(tmp)
	if err != nil {
		return err
	}
	var srv *server
	switch c.scenario {
	case "daily":
		if c.store != "embedded" {
			return fmt.Errorf("the daily scenario runs on the embedded store")
		}
		if srv, err = startServer(ctx, bin, filepath.Join(tmp, "data"), ""); err != nil {
			return err
		}
		defer srv.stop()
		if err := seedDaily(srv.url, c.datasets, c.days); err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
	case "hourly":
		storeURL, dropStore, err := seedHourly(ctx, c, filepath.Join(tmp, "data"))
		if err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
		defer dropStore()
		if srv, err = startServer(ctx, bin, filepath.Join(tmp, "data"), storeURL); err != nil {
			return err
		}
		defer srv.stop()
	default:
		return fmt.Errorf("-scenario %q: want daily or hourly", c.scenario)
	}
	if err := measure(ctx, c, srv); err != nil {
		return err
	}
	if c.keep {
		fmt.Printf("the server keeps running at %s/ui; Ctrl-C ends it\n", srv.url)
		<-ctx.Done()
	}
	return nil
}
