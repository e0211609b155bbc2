package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/runner"
)

func runCommand() *cli.Command {
	one := 1
	return &cli.Command{
		Name:      "run",
		Category:  catRunner,
		Usage:     "claim chunks and run a command on each, supervised",
		UsageText: "chunklock run --job J [--job J2...] [--loop [--parallel N] [--max N] [--idle-wait D]] [--dataid D] -- CMD [ARGS...]",
		ArgsUsage: "-- CMD [ARGS...]",
		Description: "Claims a chunk of the job and runs CMD with the claim in its environment:\n" +
			"   CHUNKLOCK_JOB, CHUNKLOCK_DATAID, CHUNKLOCK_ATTEMPT, CHUNKLOCK_EXECUTOR, CHUNKLOCK_FENCE,\n" +
			"   CHUNKLOCK_CLAIM_TOKEN, CHUNKLOCK_URL,\n" +
			"   CHUNKLOCK_OUTPUT_{DATASET,URL,CONNECTION,LOCATION,SECRET},\n" +
			"   CHUNKLOCK_INPUTS (input dataset ids, comma-separated),\n" +
			"   CHUNKLOCK_INPUT_<DATASET>_{URL,CONNECTION,LOCATION,SECRET} (DATASET upper-cased, other\n" +
			"   characters as _), CHUNKLOCK_INPUT_<n>_{DATASET,...} (n from 0, in input order),\n" +
			"   CHUNKLOCK_INPUT_<DATASET>_{LOCATIONS,DATAIDS} (every chunk read of the input, one per\n" +
			"   line: several for an input read through a mapping, such as a 7-day lookback; LOCATION\n" +
			"   is then the newest), for a dataset with dimensions each dimension's value\n" +
			"   (CHUNKLOCK_OUTPUT_<DIMENSION>, CHUNKLOCK_INPUT_<DATASET>_<DIMENSION>: CHUNKLOCK_DATAID is\n" +
			"   then 2026-11-22|eu, CHUNKLOCK_OUTPUT_REGION eu; an input's dimension is set when every\n" +
			"   chunk read of it has the same value: a roll-up of the regions sets no REGION), and the\n" +
			"   job's env. SECRET variables need\n" +
			"   the job key (CHUNKLOCK_JOB_KEY or --job-key-file).\n\n" +
			"While CMD runs the claim is heartbeaten every third of the job's leaseSeconds. Exit 0\n" +
			"completes the claim (the output chunk becomes READY); any other exit fails it with the\n" +
			"tail of CMD's stderr as the reason (it is retried, up to the job's maxAttempts). If the\n" +
			"claim stops being ours (expired, or forced by an operator) CMD is stopped at once\n" +
			"(SIGTERM to its process group, SIGKILL after --kill-grace) and nothing is written.\n" +
			"SIGINT or SIGTERM to the runner stops CMD the same way and releases the claim (no\n" +
			"attempt is counted). On Linux, if the runner is killed, CMD is killed with it.\n\n" +
			"The runner refuses a job whose env names a variable it refuses, which a server older\n" +
			"than the rule, or one that allows more, may still hold: at start it exits with an error\n" +
			"before claiming; should a claim bring such an env later, CMD is not started, the claim\n" +
			"is failed with the variables' names as the reason, and the runner stops serving the\n" +
			"job.\n" + envRuleHelp + "\n\n" +
			"With several --job the runner serves each in turn (CMD can dispatch on CHUNKLOCK_JOB).\n" +
			"With --loop it keeps claiming until nothing is left, or with --idle-wait D waits up to\n" +
			"D without work for new chunks (it follows the server's events subscription and falls\n" +
			"back to polling when that is unavailable; an idle runner also asks every few seconds,\n" +
			"which is how it sees a scheduled job's next window come due: give such a job an\n" +
			"--idle-wait longer than its period). A server that cannot be reached is retried\n" +
			"with backoff for up to --retry-for.\n\n" +
			"--parallel N (with --loop) keeps up to N CMD processes running at once, each under its\n" +
			"own claim: the runner claims for all its free slots in one request (claimNext),\n" +
			"heartbeats all its claims not yet ended (those waiting to end too), a request per 1,000, every\n" +
			"third of the shortest lease of its jobs, and completes or fails the processes that\n" +
			"exited together in one request each, in the background: a freed slot is claimed for\n" +
			"again meanwhile (up to 1,000 claims wait to end). A process whose claim is lost is\n" +
			"stopped as above. SIGINT or SIGTERM to such a runner claims nothing more, releases what\n" +
			"it claimed and has not started, and waits for the running processes, which it still\n" +
			"heartbeats and ends as they exit.\n\n" +
			"Exit status:\n" +
			"   0    the chunk was completed (--loop: nothing is left to do; failed chunks are\n" +
			"        recorded on the server, see `chunklock status`)\n" +
			"   3    nothing to do: no chunk was claimable (without --loop)\n" +
			"   1    CMD failed, the claim was lost, or an error\n" +
			"   130  stopped by SIGINT, 143 by SIGTERM (the claim was released)\n\n" +
			"Examples:\n" +
			"   chunklock run --job transform -- ./jobs/transform.sh\n" +
			"   chunklock run --job extract --job transform --loop --idle-wait 10m -- sh -c './jobs/$CHUNKLOCK_JOB.sh'" + connHelp,
		StopOnNthArg: &one,
		Flags: append(append(connFlags(), jobKeyFlags()...),
			&cli.StringSliceFlag{Name: "job", Required: true, Usage: "the `job` to claim for; repeat to serve several"},
			&cli.BoolFlag{Name: "loop", Usage: "keep claiming until nothing is left (see --idle-wait)"},
			&cli.IntFlag{Name: "max", Usage: "with --loop, stop after `N` chunks (0: no limit)"},
			&cli.IntFlag{Name: "parallel", Value: 1, Usage: "with --loop, keep up to `N` CMD processes running at once (1 to 1000), claiming and ending in batches"},
			&cli.DurationFlag{Name: "idle-wait", Usage: "with --loop, wait up to `D` without work for new chunks before exiting (0: exit as soon as nothing is claimable)"},
			&cli.StringFlag{Name: "dataid", Usage: "claim this `dataid` (one job, without --loop); how a job without inputs whose output has no partition definition gets new chunks (a scheduled or DYNAMIC output is claimed in order without it)"},
			&cli.StringFlag{Name: "executor", DefaultText: "host-pid-random", Usage: "the `name` operators see as the holder of this runner's claims"},
			&cli.StringFlag{Name: "dir", TakesFile: true, Usage: "working `directory` of CMD (default: the current one)"},
			&cli.DurationFlag{Name: "kill-grace", Value: 10 * time.Second, Usage: "how long CMD gets between SIGTERM and SIGKILL when it must stop"},
			&cli.DurationFlag{Name: "retry-for", Value: 5 * time.Minute, Usage: "how long to keep retrying a server that cannot be reached before giving up"},
			envAllowFlag(runnerEnvAllowUsage),
		),
		Action: action(runJobs),
	}
}

// envRuleHelp describes, in run's and next's help, which job env names a
// runner refuses and how an operator admits one.
const envRuleHelp = "Refused are the names that change how a process loads or runs code, by family: a\n" +
	"word (the parts between _) ending in PATH, LIB, HOME, ROOT, BIN, CONF, CONFIG, RC, INIT,\n" +
	"CACHE, PLUGINS, MODULES, OPTIONS, OPTS, OPT, FLAGS, ARGS, COMMAND, CMD, EXEC, SHELL,\n" +
	"EDITOR, PAGER, RSH, SSH, WRAPPER, LAUNCHER, COMPILER, LINKER, RUNNER, PROXY, MIRROR,\n" +
	"REGISTRY, VERIFY, INSECURE, ...; a name starting with LD_, DYLD_, BASH_, GIT_, SSH_,\n" +
	"PYTHON, PERL5, R_, PIP_, UV_, CONDA_, NPM_CONFIG_, CARGO_, ...; or containing PYTHON,\n" +
	"KEYLOG, INDEX_URL, CA_BUNDLE, SSL_CERT; by name (ENV, IFS, PS4, CC, LD, MAKEFILES,\n" +
	"LESSOPEN, ...); and the runner's own CHUNKLOCK_* (the README lists the whole rule).\n" +
	"--env-allow NAME,... (CHUNKLOCK_ENV_ALLOW) admits names the operator knows to be safe on\n" +
	"this host, but not CHUNKLOCK_*; the server's own --env-allow does not reach runners."

// runnerEnvAllowUsage is the usage of run's and next's --env-allow.
const runnerEnvAllowUsage = "job env `NAME`s this runner passes on although the rule on env names refuses them (such as TAR_OPTIONS); separate several with commas"

// exitSignal is the exit status of a runner stopped by a signal.
func exitSignal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitError
}

// runJobs is `chunklock run`: it checks the flags, builds the job clients
// and hands over to runner.Loop, whose outcome it turns into an exit status.
func runJobs(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	cfg, err := runConfig(cmd, c)
	if err != nil {
		return err
	}
	for _, j := range cfg.Jobs {
		if key, _ := jobKeyFor(cmd, j, len(cfg.Jobs) > 1); key == "" {
			warnKeyless(ctx, cmd, c, j, "chunklock run: ")
		}
	}
	err = runner.Loop(ctx, cfg)
	var (
		stopped *runner.Stopped
		none    *runner.NothingToDo
		ended   *runner.ChunkError
	)
	switch {
	case errors.As(err, &stopped):
		return exitStatus(exitSignal(stopped.Signal))
	case errors.As(err, &none):
		return exitWith(cmd, exitNothing, "%v", none)
	case errors.As(err, &ended):
		return exitStatus(exitError) // the runner has said how the claim ended
	}
	return err
}

// runConfig is the runner.Config of the command's flags.
func runConfig(cmd *cli.Command, c *client.Client) (runner.Config, error) {
	argv := cmd.Args().Slice()
	if len(argv) == 0 {
		return runner.Config{}, errors.New("no command to run: give it after --, e.g. `chunklock run --job J -- ./job.sh`")
	}
	jobs := slices.Compact(cmd.StringSlice("job"))
	loop := cmd.Bool("loop")
	dataid := cmd.String("dataid")
	switch {
	case dataid != "" && (loop || len(jobs) > 1):
		return runner.Config{}, errors.New("--dataid claims one chunk of one job: use it without --loop and with a single --job")
	case !loop && (cmd.IsSet("max") || cmd.IsSet("idle-wait") || cmd.IsSet("parallel")):
		return runner.Config{}, errors.New("--max, --parallel and --idle-wait apply to --loop only")
	case cmd.Int("parallel") < 1 || cmd.Int("parallel") > backends.MaxClaimNext:
		return runner.Config{}, fmt.Errorf("--parallel must be 1 to %d, not %d", backends.MaxClaimNext, cmd.Int("parallel"))
	case cmd.Int("max") < 0 || cmd.Duration("idle-wait") < 0:
		return runner.Config{}, errors.New("--max and --idle-wait must not be negative")
	}
	allow, err := envAllow(cmd)
	if err != nil {
		return runner.Config{}, err
	}
	cfg := runner.Config{Client: c, JobClients: map[string]*client.Client{}, Jobs: jobs, Loop: loop, EnvAllow: allow,
		Max: cmd.Int("max"), Parallel: cmd.Int("parallel"), IdleWait: cmd.Duration("idle-wait"), DataID: dataid,
		Executor: cmd.String("executor"), RetryFor: cmd.Duration("retry-for"), URL: cmd.String("url"),
		Command: argv, Dir: cmd.String("dir"), Stdout: stdout(cmd), Stderr: stderr(cmd), KillGrace: cmd.Duration("kill-grace"),
		StopSignals: []os.Signal{syscall.SIGINT, syscall.SIGTERM},
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr(cmd), "chunklock run: "+format+"\n", args...)
		},
		Explain: func(err error) error { return explain(cmd, err) },
	}
	for _, j := range jobs {
		key, err := jobKeyFor(cmd, j, len(jobs) > 1)
		if err != nil {
			return runner.Config{}, err
		}
		if cfg.JobClients[j], err = newClient(cmd, key); err != nil {
			return runner.Config{}, err
		}
	}
	if cfg.Executor == "" {
		cfg.Executor = defaultExecutor()
	}
	return cfg, nil
}
