package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/runner"
)

func nextCommand() *cli.Command {
	return &cli.Command{
		Name:      "next",
		Category:  catRunner,
		Usage:     "claim the next chunk a job may produce and print the claim",
		UsageText: "chunklock next --job J [--dataid D] [--format json|env] [--executor NAME]",
		Description: "Claims one chunk for the job and prints the whole claim: as one JSON document\n" +
			"(--format json, the default) or as shell `export` lines (--format env) for eval. The\n" +
			"variables are those `chunklock run` gives its job process: CHUNKLOCK_DATAID,\n" +
			"CHUNKLOCK_CLAIM_TOKEN, CHUNKLOCK_OUTPUT_LOCATION, CHUNKLOCK_INPUT_<DATASET>_LOCATION,\n" +
			"..._URL, ..._CONNECTION, ..._SECRET (with the job key), ..._LOCATIONS and ..._DATAIDS\n" +
			"(every chunk read of an input, one a line), each dimension's value of a dataset with\n" +
			"dimensions (CHUNKLOCK_OUTPUT_REGION, CHUNKLOCK_INPUT_<DATASET>_REGION: see `chunklock run\n" +
			"--help`), and the job's env (every value single-quoted).\n\n" +
			"Without --dataid the server picks (findNext): the lowest resubmitted dataid whose inputs\n" +
			"are ready, else the lowest dataid whose inputs are all READY and that the job has not\n" +
			"consumed; a failed chunk of a job with retryDelaySeconds once its retry time has come.\n" +
			"A job with no inputs whose output dataset has a partition definition is scheduled: it\n" +
			"claims each expected dataid once it is due (its window has ended, plus lagSeconds),\n" +
			"lowest first. Another job with no inputs claims new chunks with --dataid only.\n\n" +
			"Then keep the claim alive with `chunklock heartbeat` (within the job's leaseSeconds)\n" +
			"and end it with `chunklock complete`, `chunklock fail --reason ...` or\n" +
			"`chunklock release`; each reads the token from CHUNKLOCK_CLAIM_TOKEN by default.\n\n" +
			"A claim whose job env names a variable the runner refuses is failed with the reason\n" +
			"and not printed.\n" + envRuleHelp + "\n\n" +
			"Exit status:\n" +
			"   0  a chunk was claimed (the claim is on stdout)\n" +
			"   3  nothing to do: no chunk is claimable now (with --dataid: that chunk is locked;\n" +
			"      the blockers are on stderr); nothing is printed on stdout\n" +
			"   1  error (message on stderr)\n\n" +
			"Example (test the exit status before eval: `eval \"$(chunklock next ...)\" || exit`\n" +
			"does not stop, since eval of nothing succeeds):\n" +
			"   claim=$(chunklock next --job transform --format env) || exit\n" +
			"   eval \"$claim\"\n" +
			"   if transform <\"$CHUNKLOCK_INPUT_ORDERS_LOCATION\" >\"$CHUNKLOCK_OUTPUT_LOCATION\"; then\n" +
			"     chunklock complete   # safe to repeat: a repeat answers as the first did\n" +
			"   else\n" +
			"     chunklock fail --reason \"transform failed\"\n" +
			"   fi" + connHelp,
		Flags: append(append(connFlags(), jobKeyFlags()...),
			&cli.StringFlag{Name: "job", Required: true, Usage: "the `job` to claim for"},
			&cli.StringFlag{Name: "dataid", Usage: "claim this `dataid` instead of the next one"},
			&cli.StringFlag{Name: "format", Value: "json", Usage: "`json` (one document) or env (export lines)"},
			&cli.StringFlag{Name: "executor", DefaultText: "host-pid-random", Usage: "the `name` operators see as the claim's holder"},
			envAllowFlag(runnerEnvAllowUsage),
		),
		Action: action(next),
	}
}

func next(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	format := cmd.String("format")
	if format != "json" && format != "env" {
		return fmt.Errorf("--format %q: want json or env", format)
	}
	executor := cmd.String("executor")
	if executor == "" {
		executor = defaultExecutor()
	}
	allow, err := envAllow(cmd)
	if err != nil {
		return err
	}
	job := cmd.String("job")
	key, err := jobKeyFor(cmd, job, false)
	if err != nil {
		return err
	}
	if c, err = newClient(cmd, key); err != nil {
		return err
	}
	var claim *client.Claim
	if d := cmd.String("dataid"); d != "" {
		claim, err = c.Claim(ctx, job, d, executor)
		var ce *client.Error
		if errors.As(err, &ce) && ce.Code == backends.CodeLocked {
			return exitWith(cmd, exitNothing, "nothing to do: %v", explain(cmd, err))
		}
	} else {
		claim, err = c.FindNext(ctx, job, executor)
	}
	if err != nil {
		return err
	}
	if claim == nil {
		return exitWith(cmd, exitNothing, "nothing to do: job %s has no claimable chunk now%s (see `chunklock status --job %s`)", job, whyNothing(ctx, c, job), job)
	}
	if key == "" { // said only with a claim: an empty poll has no secrets to leave out
		warnKeyless(ctx, cmd, c, job, "")
	}
	return deliverClaim(ctx, cmd, c, *claim, format, allow)
}

// deliverClaim prints claim (printClaim), or fails it (refuseEnv) when its
// job env names a variable the runner refuses.
func deliverClaim(ctx context.Context, cmd *cli.Command, c *client.Client, claim client.Claim, format string, allow envname.Allow) error {
	if err := runner.CheckEnv(claim, allow); err != nil {
		return refuseEnv(ctx, c, claim, err)
	}
	return printClaim(cmd, claim, format, allow)
}

// refuseEnv fails a claim whose job env the runner refuses (see
// runner.CheckEnv) with that as the reason, so that operators see it
// in the chunk's status, and returns the error to print.
func refuseEnv(ctx context.Context, c *client.Client, claim client.Claim, cause error) error {
	if err := c.Fail(ctx, claim.Token, cause.Error()); err != nil && client.CodeOf(err) != backends.CodeStaleClaim {
		return fmt.Errorf("%w; and failing the claim on %s %s failed too: %w", cause, claim.Job, claim.DataID, err)
	}
	return fmt.Errorf("%w; the claim on %s %s was failed with this reason: fix the job's env (`chunklock apply`)", cause, claim.Job, claim.DataID)
}

// printClaim writes a claim as JSON or export lines (with the env names
// of allow beside those the rule admits).
func printClaim(cmd *cli.Command, claim client.Claim, format string, allow envname.Allow) error {
	if format == "env" {
		_, err := fmt.Fprint(stdout(cmd), runner.ShellExports(claim, allow))
		return err
	}
	return printJSON(stdout(cmd), claim)
}

// whyNothing says, after a findNext that claimed nothing, what of the job
// itself holds its claims back: a pause, its maxConcurrent reached, or its
// pool full (": ..."); "" when none, or when the runner may not read them.
func whyNothing(ctx context.Context, c *client.Client, job string) string {
	j, err := c.Job(ctx, job)
	if err != nil {
		return ""
	}
	if j.Paused {
		return fmt.Sprintf(": it is paused (`chunklock resume %s`)", job)
	}
	if m := j.MaxConcurrent; m != nil && *m > 0 {
		if live, err := c.Claims(ctx, job); err == nil && len(live) >= *m {
			return fmt.Sprintf(": its %d live claim(s) are its maxConcurrent", len(live))
		}
	}
	if j.Pool != nil && *j.Pool != "" {
		if p, err := c.Pool(ctx, *j.Pool); err == nil && p.Used >= p.Slots {
			return fmt.Sprintf(": its pool %s has no free slot (%d of %d used, `chunklock pools`)", p.ID, p.Used, p.Slots)
		}
	}
	return ""
}

// warnKeyless says on stderr, for a job claimed without its key, that its
// credentials' SECRET variables are left out: the claim still succeeds,
// and a job that needs a secret would otherwise fail on its own.
func warnKeyless(ctx context.Context, cmd *cli.Command, c *client.Client, job, prefix string) {
	j, err := c.Job(ctx, job)
	if err != nil || len(j.Credentials) == 0 {
		return
	}
	var ds []string
	for _, cr := range j.Credentials {
		ds = append(ds, cr.Dataset)
	}
	given := "no key was given"
	if dir := cmd.String("keys-dir"); dir != "" {
		given = "--keys-dir has no " + filepath.Join(dir, job+".key") + " (with --keys-dir, CHUNKLOCK_JOB_KEY is not read)"
	}
	fmt.Fprintf(stderr(cmd), "%swarning: job %s has secrets (of %s) and %s: its claims leave out their SECRET variables (give the key printed by `chunklock apply` in CHUNKLOCK_JOB_KEY, --job-key-file or --keys-dir)\n",
		prefix, job, strings.Join(ds, ", "), given)
}
