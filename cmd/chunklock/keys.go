package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends/open"
	"github.com/chunklock/chunklock/keys"
	"github.com/chunklock/chunklock/keys/keyops"
	"github.com/chunklock/chunklock/keys/keyring"
	"github.com/chunklock/chunklock/keys/vault"
)

// keysCommand is `chunklock keys`: Vault policies and setup, key rotation
// and fresh job keys.
func keysCommand() *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "manage job keys: Vault policies and setup, key rotation, fresh job tokens",
		Description: "Every job has a key that decrypts its dataset secrets. With the age keyring (the default)\n" +
			"it is an age identity; with Vault transit (--keys vault://...) it is a Vault token that\n" +
			"may decrypt with the job's transit key only. chunklock keeps only the public part and the\n" +
			"ciphertexts: the server alone never decrypts.\n\n" +
			"--keys takes the same URL as `chunklock serve --keys` (CHUNKLOCK_KEYS); Vault tokens come\n" +
			"from VAULT_TOKEN, never from the command line.\n\n" +
			"Examples:\n" +
			"   chunklock keys setup --keys 'vault://vault.example:8200?prefix=chunklock-'\n" +
			"   chunklock keys policy --keys 'vault://vault.example:8200?prefix=chunklock-' --job aggregate-sales",
		Commands: []*cli.Command{
			keysPolicyCommand(),
			keysServerPolicyCommand(),
			keysSetupCommand(),
			keysRotateCommand(),
			keysNewTokenCommand(),
		},
	}
}

func keysFlag() cli.Flag {
	return &cli.StringFlag{Name: "keys", Sources: cli.EnvVars("CHUNKLOCK_KEYS"), DefaultText: "age",
		Usage: "keyring `URL`, as for serve: vault://host:8200?mount=transit&prefix=chunklock- (tls=false for http)"}
}

func jobFlag() cli.Flag {
	return &cli.StringFlag{Name: "job", Required: true, Usage: "the job's `id`"}
}

// storeFlags are serve's store settings.
func storeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "store", Sources: cli.EnvVars("CHUNKLOCK_STORE"), DefaultText: "embedded etcd in --data-dir",
			Usage: "storage `URL`, as for serve: empty for embedded etcd in --data-dir (stop the server first), postgres://..., etcd://..."},
		&cli.StringFlag{Name: "data-dir", Value: "./chunklock-data", Sources: cli.EnvVars("CHUNKLOCK_DATA_DIR"),
			Usage: "`directory` of the embedded etcd store"},
	}
}

func keysPolicyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "print the Vault policy a job's token has in effect",
		Description: "Prints, in HCL, what a job token minted by chunklock may do: decrypt with that job's\n" +
			"transit key and nothing else. The tokens carry one templated policy, <prefix>job, written by\n" +
			"`chunklock keys setup`; this is what it evaluates to for the job, for review and audits.\n" +
			"Nothing is contacted and no token is needed.\n\n" +
			"   chunklock keys policy --keys 'vault://vault.example:8200?prefix=chunklock-' --job aggregate-sales",
		Flags: []cli.Flag{keysFlag(), jobFlag()},
		Action: func(_ context.Context, cmd *cli.Command) error {
			k, err := vaultKeyring(cmd, false)
			if err != nil {
				return err
			}
			job := cmd.String("job")
			if err := keys.CheckJob(job); err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.Root().Writer, k.Policy(job))
			return err
		},
	}
}

func keysServerPolicyCommand() *cli.Command {
	return &cli.Command{
		Name:  "server-policy",
		Usage: "print the Vault policy of the chunklock server's token",
		Description: "Prints, in HCL, the policy `chunklock keys setup` writes as <prefix>server: create, rotate\n" +
			"and rewrap job keys, encrypt, mint job tokens; never decrypt, export or back up a key.\n" +
			"Nothing is contacted and no token is needed.\n\n" +
			"   chunklock keys server-policy --keys 'vault://vault.example:8200?mount=transit' > chunklock-server.hcl\n" +
			"   vault policy write chunklock-server chunklock-server.hcl",
		Flags: []cli.Flag{keysFlag()},
		Action: func(_ context.Context, cmd *cli.Command) error {
			k, err := vaultKeyring(cmd, false)
			if err != nil {
				return err
			}
			c := k.Config()
			_, err = fmt.Fprint(cmd.Root().Writer, vault.ServerPolicy(c.Prefix, c.Mount))
			return err
		},
	}
}

func keysSetupCommand() *cli.Command {
	return &cli.Command{
		Name:  "setup",
		Usage: "prepare Vault for chunklock (run once, with an administrator's token)",
		Description: "With an administrator's token in VAULT_TOKEN, idempotently: mounts transit at the --keys\n" +
			"mount if nothing is mounted there, writes the policies <prefix>job (job tokens) and\n" +
			"<prefix>server (the server's token), and the token role <prefix>job that job tokens are\n" +
			"minted through. Then create the server's token with the policy <prefix>server:\n\n" +
			"   VAULT_TOKEN=<admin token> chunklock keys setup --keys vault://vault.example:8200\n" +
			"   vault token create -policy=chunklock-server -orphan -period=768h",
		Flags: []cli.Flag{keysFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			k, err := vaultKeyring(cmd, true)
			if err != nil {
				return err
			}
			cfg := k.Config()
			cfg.Token = os.Getenv("VAULT_TOKEN")
			if err := vault.Setup(ctx, cfg); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.Root().Writer, "Vault at %s is ready for chunklock: transit at %q, policies %q and %q, token role %q.\n"+
				"Next, create the server's token and start the server with it:\n"+
				"   vault token create -policy=%s -orphan -period=768h\n"+
				"   VAULT_TOKEN=<that token> chunklock serve --keys '%s'\n",
				cfg.Address, cfg.Mount, vault.JobPolicyName(cfg.Prefix), vault.ServerPolicyName(cfg.Prefix), vault.RoleName(cfg.Prefix),
				vault.ServerPolicyName(cfg.Prefix), cmd.String("keys"))
			return err
		},
	}
}

func keysRotateCommand() *cli.Command {
	return &cli.Command{
		Name:  "rotate",
		Usage: "rotate a job's Vault transit key and rewrap its stored credentials",
		Description: "Adds a version to the job's transit key, re-encrypts every credential of the job stored\n" +
			"in --store to that version inside Vault (rewrap: no plaintext ever leaves Vault) and writes\n" +
			"them back. With --min-decryption-version it then retires the older versions, so that\n" +
			"ciphertexts made with them (old copies of the store included) can no longer be decrypted.\n" +
			"The server's token (VAULT_TOKEN) suffices; runners keep their job tokens. Safe to run again.\n\n" +
			"   VAULT_TOKEN=<server token> chunklock keys rotate --keys vault://vault.example:8200 \\\n" +
			"       --store postgres://chunklock@db/chunklock --job aggregate-sales --min-decryption-version",
		Flags: append([]cli.Flag{keysFlag(), jobFlag(),
			&cli.BoolFlag{Name: "min-decryption-version",
				Usage: "after rewrapping, raise the key's min_decryption_version to the new version (retire older versions)"},
		}, storeFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			k, err := vaultKeyring(cmd, true)
			if err != nil {
				return err
			}
			if err := existingStore(cmd.String("store"), cmd.String("data-dir")); err != nil {
				return err
			}
			store, err := openStore(ctx, cmd.String("store"), open.Options{DataDir: cmd.String("data-dir")})
			if err != nil {
				return err
			}
			defer store.Close()
			rot, err := keyops.Rotate(ctx, store, k, cmd.String("job"), cmd.Bool("min-decryption-version"))
			if err != nil {
				return err
			}
			retired := "older versions still decrypt; retire them with --min-decryption-version"
			if rot.MinDecryptionVersion >= rot.Version {
				retired = "older versions retired"
			}
			skipped := ""
			if rot.Skipped > 0 {
				skipped = fmt.Sprintf(" (%d set anew meanwhile, already at the new version)", rot.Skipped)
			}
			_, err = fmt.Fprintf(cmd.Root().Writer, "job %q: transit key %q rotated to version %d; %d credential(s) rewrapped%s; min_decryption_version %d (%s)\n",
				rot.Job, rot.Key, rot.Version, rot.Rewrapped, skipped, rot.MinDecryptionVersion, retired)
			return err
		},
	}
}

func keysNewTokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "new-token",
		Usage: "mint a fresh job key for an existing job whose key was lost",
		Description: "For a job with a Vault key: mints a new job token (it may decrypt with the job's transit key\n" +
			"only) and prints it on stdout, once. The job's credentials stay readable; earlier tokens\n" +
			"stay valid until they expire or are revoked (vault token revoke).\n\n" +
			"An age key cannot be recovered: chunklock keeps only its public recipient. --new-age-key\n" +
			"gives the job a new age key instead (printed on stdout, once); every credential of the job\n" +
			"must then be set again (setCredential), since the old ones were encrypted to the lost key.\n\n" +
			"   VAULT_TOKEN=<server token> chunklock keys new-token --keys vault://vault.example:8200 \\\n" +
			"       --store postgres://chunklock@db/chunklock --job aggregate-sales > aggregate-sales.key\n" +
			"   chunklock keys new-token --store postgres://chunklock@db/chunklock --job dev-job --new-age-key",
		Flags: append([]cli.Flag{keysFlag(), jobFlag(),
			&cli.BoolFlag{Name: "new-age-key", Usage: "for a job with an age key: replace it with a new one (its credentials must then be set again)"},
		}, storeFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			job := cmd.String("job")
			if err := existingStore(cmd.String("store"), cmd.String("data-dir")); err != nil {
				return err
			}
			store, err := openStore(ctx, cmd.String("store"), open.Options{DataDir: cmd.String("data-dir")})
			if err != nil {
				return err
			}
			defer store.Close()
			j, err := store.Job(ctx, job)
			if err != nil {
				return err
			}
			stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
			switch {
			case j.Key.Kind == vault.Kind:
				if cmd.Bool("new-age-key") {
					return fmt.Errorf("job %q has a Vault key; --new-age-key applies to age keys only (leave it out to mint a Vault token)", job)
				}
				k, err := vaultKeyring(cmd, true)
				if err != nil {
					return err
				}
				token, err := keyops.NewVaultToken(ctx, store, k, job)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "a new job token for job %q (shown once; chunklock does not keep it). Runners send it in the X-Chunklock-Job-Key header.\n", job)
				_, err = fmt.Fprintln(stdout, token)
				return err
			case cmd.Bool("new-age-key"):
				key, err := keyops.ReplaceAgeKey(ctx, store, job)
				if err != nil {
					return err
				}
				creds, err := store.Credentials(ctx, job)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "job %q has a new age key (shown once; chunklock keeps only its recipient). Runners send it in the X-Chunklock-Job-Key header.\n", job)
				if len(creds) > 0 {
					fmt.Fprintf(stderr, "set the job's %d credential(s) again (setCredential): they were encrypted to the old key.\n", len(creds))
				}
				_, err = fmt.Fprintln(stdout, key)
				return err
			case j.Key.Public == "":
				return fmt.Errorf("job %q has no key yet: upsert it once through the server (the first upsert creates the key), or give --new-age-key", job)
			case j.Key.Kind == "age":
				return fmt.Errorf("job %q has an age key, which cannot be recovered: chunklock keeps only its public recipient. "+
					"Give the job a new key with `chunklock keys new-token --job %s --new-age-key`, then set each of its credentials again", job, job)
			default:
				return fmt.Errorf("job %q has a key of kind %q, which this command does not know", job, j.Key.Kind)
			}
		},
	}
}

// vaultKeyring opens the Vault keyring --keys names. Printing a policy
// contacts nothing and needs no token (needToken false): the keyring then
// gets a placeholder token, and a placeholder address when vault:// names
// no host and VAULT_ADDR is unset.
func vaultKeyring(cmd *cli.Command, needToken bool) (*vault.Keyring, error) {
	getenv := os.Getenv
	if needToken && os.Getenv("VAULT_TOKEN") == "" {
		return nil, errors.New(commandName(cmd) + " needs a Vault token in VAULT_TOKEN (an administrator's for setup, the server's otherwise)")
	}
	if !needToken {
		getenv = func(name string) string {
			switch v := os.Getenv(name); {
			case name == "VAULT_TOKEN":
				return "unused-placeholder"
			case name == "VAULT_ADDR" && v == "":
				return "https://vault.invalid:8200"
			default:
				return v
			}
		}
	}
	kr, err := keyring.Open(cmd.String("keys"), keyring.WithGetenv(getenv))
	if err != nil {
		return nil, err
	}
	k, ok := kr.(*vault.Keyring)
	if !ok {
		return nil, fmt.Errorf("%s needs the Vault keyring: give --keys vault://host:8200?mount=transit&prefix=chunklock- (or CHUNKLOCK_KEYS); the %s keyring has no policies, tokens or key versions", commandName(cmd), kr.Kind())
	}
	return k, nil
}

// commandName names cmd without the program name, which the error printer
// adds: "keys setup".
func commandName(cmd *cli.Command) string {
	return strings.TrimPrefix(cmd.FullName(), cmd.Root().Name+" ")
}
