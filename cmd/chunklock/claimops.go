package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/client"
)

// exitStale is the exit status of a claim operation on a claim that is no
// longer live.
const exitStale = 4

const claimOpExit = "\n\nExit status: 0 done; 4 the claim is no longer live (completed, failed, released,\n" +
	"expired or forced by an operator: stop and write nothing more); 1 any other error."

func tokenFlag() cli.Flag {
	return &cli.StringFlag{Name: "token", Sources: cli.EnvVars("CHUNKLOCK_CLAIM_TOKEN"),
		Usage: "the claim `token` (default CHUNKLOCK_CLAIM_TOKEN, as set by `next --format env` and `run`)"}
}

// claimOp builds one of the commands that act on a claim by its token.
func claimOp(name, usage, example string, flags []cli.Flag, do func(ctx context.Context, cmd *cli.Command, c *client.Client, token string) error) *cli.Command {
	return &cli.Command{
		Name:        name,
		Category:    catRunner,
		Usage:       usage,
		UsageText:   "chunklock " + name + " [--token TOKEN]",
		Description: usage + ".\n\nExample:\n   " + example + claimOpExit + connHelp,
		Flags:       append(append(connFlags(), tokenFlag()), flags...),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			token := strings.TrimSpace(cmd.String("token"))
			if token == "" {
				return errors.New("the claim token is empty (--token, or CHUNKLOCK_CLAIM_TOKEN): probably nothing was claimed. " +
					"`chunklock next` exits 3 and prints nothing when there is nothing to claim: check its exit status " +
					"before using its claim, e.g. `claim=$(chunklock next --job J --format env) || exit; eval \"$claim\"`")
			}
			err := do(ctx, cmd, c, token)
			if client.CodeOf(err) == "STALE_CLAIM" {
				return exitWith(cmd, exitStale, "chunklock %s: %v", name, explain(cmd, err))
			}
			return err
		}),
	}
}

func completeCommand() *cli.Command {
	return claimOp("complete", "end a claim successfully: its output chunk becomes READY",
		`chunklock complete --token "$CHUNKLOCK_CLAIM_TOKEN"`, nil,
		func(ctx context.Context, _ *cli.Command, c *client.Client, token string) error {
			return c.Complete(ctx, token)
		})
}

func failCommand() *cli.Command {
	return claimOp("fail", "end a claim in failure: the chunk is retried (on HOLD once the job's maxAttempts are used)",
		`chunklock fail --reason "upstream file truncated"`,
		[]cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why it failed (`text` kept with the chunk; the last 4096 bytes)"}},
		func(ctx context.Context, cmd *cli.Command, c *client.Client, token string) error {
			return c.Fail(ctx, token, cmd.String("reason"))
		})
}

func heartbeatCommand() *cli.Command {
	return claimOp("heartbeat", "extend a claim's lease by the job's leaseSeconds and print the new end",
		`chunklock heartbeat --quiet || exit 1   # also a check that the claim is still ours`,
		[]cli.Flag{&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing; the exit status tells"}},
		func(ctx context.Context, cmd *cli.Command, c *client.Client, token string) error {
			until, err := c.Heartbeat(ctx, token)
			if err == nil && !cmd.Bool("quiet") {
				fmt.Fprintf(stdout(cmd), "lease extended until %s\n", until.Local().Format(time.RFC3339))
			}
			return err
		})
}

func releaseCommand() *cli.Command {
	return claimOp("release", "give a claim back without counting an attempt: the chunk becomes claimable as before",
		`chunklock release   # e.g. in a trap on SIGTERM`, nil,
		func(ctx context.Context, _ *cli.Command, c *client.Client, token string) error {
			return c.Release(ctx, token)
		})
}
