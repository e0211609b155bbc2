package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

// The catalog lifecycle (SPEC §11): chunklock delete, pause and resume.

func deleteCommand() *cli.Command {
	kinds := map[string]func(ctx context.Context, c *client.Client, id string, deleteChunks bool) error{
		"job": func(ctx context.Context, c *client.Client, id string, _ bool) error { return c.DeleteJob(ctx, id) },
		"dataset": func(ctx context.Context, c *client.Client, id string, dc bool) error {
			return c.DeleteDataset(ctx, id, dc)
		},
		"pool": func(ctx context.Context, c *client.Client, id string, _ bool) error { return c.DeletePool(ctx, id) },
	}
	return &cli.Command{
		Name:      "delete",
		Category:  catPipeline,
		Usage:     "delete a job, a dataset or a pool from the catalog",
		UsageText: "chunklock delete job|dataset|pool ID [--delete-chunks]",
		Description: "job: deletes the job with its key, credentials, queue and reads; refused (LOCKED,\n" +
			"listing them) while it has live claims: `chunklock pause` it first and delete it once\n" +
			"they end (run the delete again then). The chunks it produced keep their status and\n" +
			"stay readable by its consumers: the next job declared for its output, under any id,\n" +
			"takes them over without computing READY ones again.\n" +
			"dataset: deletes a dataset no job reads or writes, with its chunks and credentials;\n" +
			"one with chunks only with --delete-chunks. Its events stay.\n" +
			"pool: deletes a pool no job names.\n\n" +
			"Examples:\n" +
			"   chunklock pause transform && chunklock delete job transform\n" +
			"   chunklock delete dataset scratch --delete-chunks\n" +
			"   chunklock delete pool warehouse" + connHelp,
		Flags: append(connFlags(),
			&cli.BoolFlag{Name: "delete-chunks", Usage: "delete a dataset's chunks too (required when it has any)"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			args := cmd.Args().Slice()
			if len(args) != 2 {
				return fmt.Errorf("usage: chunklock delete job|dataset|pool ID [--delete-chunks]")
			}
			del, ok := kinds[args[0]]
			if !ok {
				return fmt.Errorf("chunklock delete: %q is not job, dataset or pool", args[0])
			}
			if cmd.Bool("delete-chunks") && args[0] != "dataset" {
				return fmt.Errorf("--delete-chunks applies to datasets only")
			}
			if err := del(ctx, c, args[1], cmd.Bool("delete-chunks")); err != nil {
				var ce *client.Error
				if args[0] == "job" && errors.As(err, &ce) && ce.Code == backends.CodeLocked {
					// The blockers are the live claims the message names,
					// not chunks a claim waits for.
					if j, err := c.Job(ctx, args[1]); err == nil && j.Paused {
						return fmt.Errorf("%s: %s; `chunklock status` lists the live claims", ce.Code, ce.Message)
					}
					return fmt.Errorf("%s: %s; `chunklock status` lists the live claims, `chunklock pause %s` stops new ones", ce.Code, ce.Message, args[1])
				}
				return err
			}
			fmt.Fprintf(stdout(cmd), "deleted %s %s\n", args[0], args[1])
			return nil
		}),
	}
}

func pauseCommand(resume bool) *cli.Command {
	name, usage, done := "pause", "pause a job: it claims nothing until resumed; live claims run to their end", "paused"
	do := (*client.Client).PauseJob
	if resume {
		name, usage, done = "resume", "resume a paused job", "resumed"
		do = (*client.Client).ResumeJob
	}
	return &cli.Command{
		Name:      name,
		Category:  catOperator,
		Usage:     usage,
		UsageText: "chunklock " + name + " JOB",
		Description: "Pausing is operational state: `chunklock apply` leaves a paused job paused unless the\n" +
			"pipeline file sets `paused:` for it. Every server stops granting the job claims from\n" +
			"the moment the pause commits.\n\n" +
			"Example:\n" +
			"   chunklock " + name + " transform" + connHelp,
		Flags: connFlags(),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			if cmd.Args().Len() != 1 {
				return fmt.Errorf("usage: chunklock %s JOB", name)
			}
			job := cmd.Args().First()
			if err := do(c, ctx, job); err != nil {
				return err
			}
			fmt.Fprintf(stdout(cmd), "%s job %s\n", done, job)
			return nil
		}),
	}
}
