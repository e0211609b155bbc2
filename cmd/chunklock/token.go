package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
	"gopkg.in/yaml.v3"

	"github.com/chunklock/chunklock/auth"
)

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "manage API tokens",
		Description: "Examples:\n" +
			"   chunklock token new --name dashboard --role reader >> tokens.yaml\n" +
			"   chunklock token new --name nightly --role runner --job aggregate-sales >> tokens.yaml",
		Commands: []*cli.Command{{
			Name:  "new",
			Usage: "make a fresh random API token and the tokens-file entry that accepts it",
			Description: "The token goes to stderr, shown this once: give it to the client, which sends it as\n" +
				"`Authorization: Bearer <token>`. The entry for the server's tokens file (--tokens-file)\n" +
				"goes to stdout; it holds only the token's SHA-256, so it can be appended directly:\n\n" +
				"   chunklock token new --name nightly --role runner --job aggregate-sales >> tokens.yaml\n\n" +
				"Restart the server to load the new entry.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "name", Required: true, Usage: "the token's name, recorded as the actor of every change it makes"},
				&cli.StringFlag{Name: "role", Required: true, Usage: "admin (everything), runner (claim operations of its jobs, resource locks, reads) or reader (queries and subscriptions)"},
				&cli.StringSliceFlag{Name: "job", Usage: "a job a runner token may operate; repeat for several (runner tokens only)"},
			},
			Action: func(_ context.Context, cmd *cli.Command) error {
				token, entry, err := auth.NewToken(cmd.String("name"), auth.Role(cmd.String("role")), cmd.StringSlice("job"))
				if err != nil {
					return err
				}
				out, err := yaml.Marshal([]auth.Entry{entry})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.Root().ErrWriter, "token %q (shown once; chunklock stores only its hash):\n%s\n", entry.Name, token)
				_, err = cmd.Root().Writer.Write(out)
				return err
			},
		}},
	}
}
