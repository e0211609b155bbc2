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
		UsageText: "chunklock apply -f pipeline.yaml [--dry-run] [--prune [--delete-chunks]] [--pipeline NAME] [--keys-dir DIR]",
		Description: "Creates or updates every pool, dataset and job the file declares and stores the datasets'\n" +
			"secrets for the jobs that read or write them. Applying the same file again changes nothing.\n" +
			"The whole file is checked first, against the server's current pipeline too (references,\n" +
			"one producer per dataset, no cycle, secrets readable, no object of another pipeline): if\n" +
			"anything is wrong there, nothing is applied. The changes are then applied one by one;\n" +
			"one the server still refuses (a limit of its store, an env name its --env-allow does not\n" +
			"admit) stops the apply there, saying how many of the changes before it were applied:\n" +
			"fix the file and apply it again, which finishes the rest.\n\n" +
			"Each object apply creates belongs to the file's pipeline: `pipeline: NAME` in the file,\n" +
			"or --pipeline NAME, else the file's name without .yaml (for pipeline.yaml, its folder's\n" +
			"name); a file read from standard input needs a name for its objects to belong to it.\n" +
			"With --prune, apply then deletes the jobs, datasets and pools that earlier applies of the\n" +
			"same pipeline created and the file no longer declares: jobs first, then datasets, then\n" +
			"pools. It never deletes what was created otherwise (the API, the playground, another\n" +
			"pipeline). The plan is printed first; a deletion is refused, saying why, while the job has\n" +
			"live claims, while a job the file keeps (or one outside it) still reads or writes the\n" +
			"dataset or names the pool, and for a dataset with chunks unless --delete-chunks is given.\n" +
			"Without --prune, apply says how many such objects --prune would delete.\n\n" +
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
			"   chunklock apply -f examples/daily-pipeline/pipeline.yaml --prune --dry-run\n" +
			"   chunklock apply -f examples/daily-pipeline/pipeline.yaml --keys-dir ~/.chunklock/keys" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Required: true, TakesFile: true,
				Usage: "the pipeline YAML `file` (- for standard input)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change (the plan) and change nothing"},
			&cli.BoolFlag{Name: "prune", Usage: "also delete what earlier applies of this pipeline created and the file no longer declares"},
			&cli.BoolFlag{Name: "delete-chunks", Usage: "with --prune: delete datasets that have chunks, with their chunks (refused otherwise)"},
			&cli.StringFlag{Name: "pipeline", Usage: "the pipeline `NAME` that owns what apply creates (default: `pipeline:` in the file, else the file's name)"},
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
	name, source, err := p.PipelineName(cmd.String("pipeline"), cmd.String("file"))
	if err != nil {
		return fmt.Errorf("%w\nnothing was applied", err)
	}
	prune := cmd.Bool("prune")
	if prune && name == "" {
		return errors.New("--prune needs a pipeline name for a file read from standard input: set `pipeline: NAME` in it or pass --pipeline NAME\nnothing was applied")
	}
	if cmd.Bool("delete-chunks") && !prune {
		return errors.New("--delete-chunks goes with --prune (chunklock delete dataset ID --delete-chunks deletes one dataset)\nnothing was applied")
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
	if err := p.CheckOwners(name, haveDS, haveJobs, havePools); err != nil {
		return fmt.Errorf("%s: %w\nnothing was applied", cmd.String("file"), err)
	}
	// Read every secret before changing anything.
	secrets := map[string]string{}
	unread := map[string]bool{} // refs whose read failed: said once, not once per job
	var serr []error
	for _, cr := range p.Credentials() {
		key := cr.Ref.String()
		if _, ok := secrets[key]; ok || unread[key] {
			continue
		}
		v, err := cr.Ref.ReadSecret()
		if err != nil {
			unread[key] = true
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
	for _, w := range secretsElsewhere(p, jobList) {
		fmt.Fprintln(stderr(cmd), "chunklock: warning:", w)
	}
	plan = append(p.PlanPools(havePools), plan...) // pools first: jobs name them
	out := stdout(cmd)
	var deletions []pipeline.Change
	if name != "" {
		state := pipeline.PruneState{Datasets: haveDS, Jobs: haveJobs, Pools: havePools, DeleteChunks: cmd.Bool("delete-chunks")}
		if deletions, err = p.PlanPrune(name, state); err != nil {
			return err
		}
		if prune && len(deletions) > 0 {
			if state.Chunks, err = pruneChunks(ctx, c, deletions, haveJobs); err != nil {
				return err
			}
			if deletions, err = p.PlanPrune(name, state); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "pipeline %s (from %s)\n", name, source)
	}
	if cmd.Bool("dry-run") || prune {
		// The plan first: what would be created, changed and deleted.
		changes := 0
		for _, ch := range plan {
			if ch.Action != pipeline.Unchanged && ch.Action != pipeline.Resend {
				changes++
			}
			fmt.Fprintln(out, ch.String())
		}
		if prune {
			for _, ch := range deletions {
				if ch.Refused == "" {
					changes++
				}
				fmt.Fprintln(out, ch.String())
			}
		}
		if cmd.Bool("dry-run") {
			fmt.Fprintf(out, "dry run: %d change(s) would be applied%s%s; nothing was changed\n", changes, resent(plan), refusedNote(deletions, prune))
			return nil
		}
		fmt.Fprintf(out, "applying %d change(s):\n", changes)
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
			bp := p.Pool(ch.ID).Backend()
			bp.Pipeline = name
			err = c.UpsertPool(ctx, bp)
		case "dataset":
			bd := datasets[ch.ID].Backend()
			bd.Pipeline = name
			err = c.UpsertDataset(ctx, bd)
		case "job":
			var bj backends.Job
			bj, err = jobs[ch.ID].Backend()
			bj.Paused = jobs[ch.ID].PausedOver(jobByID[ch.ID].Paused)
			bj.Pipeline = name
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
	refused := 0
	if prune {
		// Jobs, then datasets, then pools (PlanPrune's order), after the
		// file's changes: a job the file moves off a pool no longer names it.
		for _, ch := range deletions {
			if ch.Refused != "" {
				refused++
				fmt.Fprintln(out, ch.String())
				continue
			}
			switch ch.Kind {
			case "job":
				err = c.DeleteJob(ctx, ch.ID)
			case "dataset":
				err = c.DeleteDataset(ctx, ch.ID, cmd.Bool("delete-chunks"))
			case "pool":
				err = c.DeletePool(ctx, ch.ID)
			}
			if err != nil {
				// Refused by the server after the plan was made (a claim
				// taken since): said, and the rest goes on.
				refused++
				ch.Refused = explain(cmd, err).Error()
				fmt.Fprintln(out, ch.String())
				continue
			}
			applied++
			changes++
			fmt.Fprintln(out, ch.String())
		}
	}
	fmt.Fprintf(out, "applied %d change(s)%s%s\n", changes, resent(plan), refusedNote(deletions, prune))
	if newKeys > 0 {
		w := stderr(cmd)
		if keysDir == "" {
			fmt.Fprintln(w, "\nWARNING: the job keys above are shown this once; chunklock keeps only their public part.")
			fmt.Fprintln(w, "Store each in your runner's secret store and give it to the runner in CHUNKLOCK_JOB_KEY or --job-key-file.")
		} else {
			fmt.Fprintf(w, "\nNew job keys were written to %s (mode 0600); chunklock keeps only their public part and cannot show them again.\n", keysDir)
		}
	}
	if refused > 0 {
		return fmt.Errorf("%d deletion(s) refused (said above); the rest was applied. Fix the cause and apply --prune again", refused)
	}
	return nil
}

// refusedNote says how many deletions of the plan are refused, or, without
// --prune, how many objects of the pipeline the file no longer declares.
func refusedNote(deletions []pipeline.Change, prune bool) string {
	if !prune {
		if len(deletions) == 0 {
			return ""
		}
		return fmt.Sprintf("; %d object(s) of the pipeline are no longer in the file (--prune deletes them)", len(deletions))
	}
	n := 0
	for _, ch := range deletions {
		if ch.Refused != "" {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d deletion(s) refused", n)
}

// pruneChunks counts the chunks of the datasets the deletions name and of
// the outputs of the jobs they name (a job's live claims are its output's
// RUNNING chunks). None when the server does not count chunks: the
// server's own refusals then say what the plan could not.
func pruneChunks(ctx context.Context, c *client.Client, deletions []pipeline.Change, jobs []backends.Job) (map[string]pipeline.Chunks, error) {
	output := map[string]string{}
	for _, j := range jobs {
		output[j.ID] = j.Output
	}
	var ids []string
	seen := map[string]bool{}
	for _, ch := range deletions {
		id := ch.ID
		switch ch.Kind {
		case "job":
			id = output[ch.ID]
		case "pool":
			continue
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	counts, err := c.Counts(ctx, ids)
	if errors.Is(err, client.ErrNoCounts) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]pipeline.Chunks{}
	for _, n := range counts {
		out[n.ID] = pipeline.Chunks{Total: n.Chunks.Total, Running: n.Chunks.Running}
	}
	return out, nil
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

// secretsElsewhere warns of the jobs of p that use a dataset another file
// declares and that other jobs hold a secret of: apply sends only the
// secrets its own file declares, so such a job gets none from it.
func secretsElsewhere(p *pipeline.Pipeline, have []client.Job) []string {
	declared := map[string]bool{}
	for _, d := range p.Datasets {
		declared[d.ID] = true
	}
	held := map[string]bool{} // datasets some job has a credential for
	byID := map[string]client.Job{}
	for _, j := range have {
		byID[j.ID] = j
		for _, c := range j.Credentials {
			held[c.Dataset] = true
		}
	}
	var out []string
	for _, j := range p.OrderedJobs() {
		for _, ds := range j.Datasets() {
			if declared[ds] || !held[ds] || byID[j.ID].HasCredential(ds) {
				continue
			}
			out = append(out, fmt.Sprintf("job %q uses dataset %q, which this file does not declare: other jobs hold a secret of it, and this apply sends it none (set it with the setCredential mutation, or declare the job in the file that declares the dataset)", j.ID, ds))
		}
	}
	return out
}
