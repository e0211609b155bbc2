package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/pipeline"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Category:  catPipeline,
		Usage:     "make the server's pools, datasets and jobs match a pipeline YAML file",
		UsageText: "chunklock apply -f pipeline.yaml [--dry-run] [--keys-dir DIR]",
		Description: "Creates or updates every pool, dataset and job the file declares (it never deletes) and\n" +
			"stores the datasets' secrets for the jobs that read or write them. Applying the same file\n" +
			"again changes nothing. The whole file is checked first, against the server's current\n" +
			"pipeline too (references, one producer per dataset, no cycle, secrets readable): if\n" +
			"anything is wrong nothing is applied.\n\n" +
			"Secrets are never written in the file: a dataset says where to read its secret when the\n" +
			"file is applied, `secret: {env: VARIABLE}` or `secret: {file: PATH}`. The server\n" +
			"encrypts it to the key of each job using the dataset and cannot decrypt it itself.\n\n" +
			"A new job's key is printed ONCE, when the job is created: store it in your runner's\n" +
			"secret store (runners pass it in CHUNKLOCK_JOB_KEY or --job-key-file to receive the\n" +
			"secrets). With --keys-dir each new key is written to DIR/<job>.key (mode 0600) instead.\n\n" +
			"A file whose jobs' env names a variable the rule on env names refuses (one that changes\n" +
			"how a process loads or runs code: see `chunklock run --help`) is refused, unless the\n" +
			"operators allow the name on the server (serve --env-allow) and --env-allow names it here.\n\n" +
			"Example:\n" +
			"   chunklock apply -f examples/daily-pipeline/pipeline.yaml --dry-run\n" +
			"   chunklock apply -f examples/daily-pipeline/pipeline.yaml --keys-dir ~/.chunklock/keys" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Required: true, TakesFile: true,
				Usage: "the pipeline YAML `file` (- for standard input)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change and change nothing"},
			&cli.StringFlag{Name: "keys-dir", TakesFile: true,
				Usage: "write each new job key to `DIR`/<job>.key (mode 0600) instead of printing it"},
			envAllowFlag("job env `NAME`s to accept in the file although the rule on env names refuses them, as the server's --env-allow does (the server still decides, and runners refuse them unless given them too)"),
		),
		Action: action(apply),
	}
}

func apply(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	allow, err := envAllow(cmd)
	if err != nil {
		return err
	}
	p, err := pipeline.ParseFile(cmd.String("file"), pipeline.WithEnvAllow(allow))
	if err != nil {
		return fmt.Errorf("%w\nnothing was applied", err)
	}
	keysDir := cmd.String("keys-dir")
	if keysDir != "" && !cmd.Bool("dry-run") {
		if err := os.MkdirAll(keysDir, 0o700); err != nil {
			return fmt.Errorf("--keys-dir: %w\nnothing was applied", err)
		}
	}
	dsList, err := c.Datasets(ctx)
	if err != nil {
		return err
	}
	jobList, err := c.Jobs(ctx)
	if err != nil {
		return err
	}
	haveDS := make([]backends.Dataset, len(dsList))
	for i, d := range dsList {
		haveDS[i] = d.Backend()
	}
	haveJobs := make([]backends.Job, len(jobList))
	jobByID := map[string]client.Job{}
	for i, j := range jobList {
		haveJobs[i] = j.Backend()
		jobByID[j.ID] = j
	}
	if err := p.ValidateAgainst(haveDS, haveJobs); err != nil {
		return fmt.Errorf("%s: %w\nnothing was applied", cmd.String("file"), err)
	}
	havePools, err := serverPools(ctx, c, p, cmd.String("file"))
	if err != nil {
		return err
	}
	// Read every secret before changing anything.
	secrets := map[string]string{}
	var serr []error
	for _, cr := range p.Credentials() {
		key := cr.Ref.String()
		if _, ok := secrets[key]; ok {
			continue
		}
		v, err := cr.Ref.ReadSecret()
		if err != nil {
			serr = append(serr, fmt.Errorf("dataset %q: %w", cr.Dataset, err))
			continue
		}
		secrets[key] = v
	}
	if err := errors.Join(serr...); err != nil {
		return fmt.Errorf("%w\nnothing was applied", err)
	}
	plan, err := p.Plan(haveDS, haveJobs, func(job, dataset string) bool { return jobByID[job].HasCredential(dataset) })
	if err != nil {
		return err
	}
	plan = append(p.PlanPools(havePools), plan...) // pools first: jobs name them
	out := stdout(cmd)
	if cmd.Bool("dry-run") {
		changes := 0
		for _, ch := range plan {
			if ch.Action != pipeline.Unchanged && ch.Action != pipeline.Resend {
				changes++
			}
			fmt.Fprintln(out, ch.String())
		}
		fmt.Fprintf(out, "dry run: %d change(s) would be applied%s; nothing was changed\n", changes, resent(plan))
		return nil
	}

	datasets := map[string]pipeline.Dataset{}
	for _, d := range p.Datasets {
		datasets[d.ID] = d
	}
	jobs := map[string]pipeline.Job{}
	for _, j := range p.Jobs {
		jobs[j.ID] = j
	}
	refs := map[string]pipeline.SecretRef{}
	for _, cr := range p.Credentials() {
		refs[cr.Job+"/"+cr.Dataset] = cr.Ref
	}
	newKeys := 0
	applied := 0 // changes made, secrets re-sent included
	partial := func(err error) error {
		if applied == 0 {
			return fmt.Errorf("%w\nnothing was applied", err)
		}
		return fmt.Errorf("%w\n%d of the changes above were applied; fix the cause and run apply again (it is idempotent)", err, applied)
	}
	for _, ch := range plan {
		if ch.Action == pipeline.Unchanged {
			fmt.Fprintln(out, ch.String())
			continue
		}
		switch ch.Kind {
		case "pool":
			err = c.UpsertPool(ctx, p.Pool(ch.ID).Backend())
		case "dataset":
			err = c.UpsertDataset(ctx, datasets[ch.ID].Backend())
		case "job":
			var bj backends.Job
			bj, err = jobs[ch.ID].Backend()
			bj.Paused = jobs[ch.ID].PausedOver(jobByID[ch.ID].Paused)
			if err == nil {
				var key string
				key, err = c.UpsertJob(ctx, bj)
				if err == nil && key != "" {
					newKeys++
					fmt.Fprintln(out, ch.String())
					applied++
					if keysDir == "" {
						fmt.Fprintf(out, "  job key of %s (shown once, store it now): %s\n", ch.ID, key)
					} else if path, kerr := writeJobKey(keysDir, ch.ID, key); kerr != nil {
						return partial(kerr)
					} else {
						fmt.Fprintf(out, "  job key of %s written to %s\n", ch.ID, path)
					}
					continue
				}
			}
		case "credential":
			job, dataset, _ := strings.Cut(ch.ID, "/")
			err = c.SetCredential(ctx, job, dataset, secrets[refs[ch.ID].String()])
		}
		if err != nil {
			return partial(fmt.Errorf("%s %s %s: %w", ch.Action, ch.Kind, ch.ID, explain(cmd, err)))
		}
		applied++
		fmt.Fprintln(out, ch.String())
	}
	changes := 0
	for _, ch := range plan {
		if ch.Action != pipeline.Unchanged && ch.Action != pipeline.Resend {
			changes++
		}
	}
	fmt.Fprintf(out, "applied %d change(s)%s\n", changes, resent(plan))
	if newKeys > 0 {
		w := stderr(cmd)
		if keysDir == "" {
			fmt.Fprintln(w, "\nWARNING: the job keys above are shown this once; chunklock keeps only their public part.")
			fmt.Fprintln(w, "Store each in your runner's secret store and give it to the runner in CHUNKLOCK_JOB_KEY or --job-key-file.")
		} else {
			fmt.Fprintf(w, "\nNew job keys were written to %s (mode 0600); chunklock keeps only their public part and cannot show them again.\n", keysDir)
		}
	}
	return nil
}

// serverPools reads the server's pools and checks that every pool a job
// of p names is declared in p or exists there.
func serverPools(ctx context.Context, c *client.Client, p *pipeline.Pipeline, file string) ([]backends.Pool, error) {
	list, err := c.Pools(ctx)
	if err != nil {
		return nil, err
	}
	pools := make([]backends.Pool, len(list))
	for i, pl := range list {
		pools[i] = pl.Backend()
	}
	if err := p.ValidatePoolsAgainst(pools); err != nil {
		return nil, fmt.Errorf("%s: %w\nnothing was applied", file, err)
	}
	return pools, nil
}

// resent tells how many existing secrets the plan sends again.
func resent(plan []pipeline.Change) string {
	n := 0
	for _, ch := range plan {
		if ch.Action == pipeline.Resend {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and re-sent %d existing secret(s) (secrets cannot be read back to compare)", n)
}

// writeJobKey writes a new job key to dir/<job>.key, readable by its owner
// only, and returns the path.
func writeJobKey(dir, job, key string) (string, error) {
	path := filepath.Join(dir, job+".key")
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("writing the new key of job %s to %s: %w (the server cannot show it again)", job, path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fail(err)
	}
	if _, err := fmt.Fprintln(f, key); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return path, nil
}
