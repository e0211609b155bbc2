package resolvers

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
	"github.com/chunklock/chunklock/resolvers/model"
)

// Secrets are per (job, dataset), not per chunk: a response decrypts a
// job's credentials at most once (the secrets loader, keyed by job), with
// one Keyring.Decrypt call, and every DatasetAccess.secret of that job in
// the response reads the result.
//
// findNext, claim and force decrypt before they claim when the caller
// presents a job key and selects a secret, so that a wrong key (FORBIDDEN)
// or an unreachable key service (UNAVAILABLE) makes no claim at all. Without
// the header, or without a selected secret, nothing is decrypted.

// keyringFor returns the keyring of the kind recorded with job's key. A job
// whose keyring this server does not run gets UNAVAILABLE naming the
// setting to fix: its ciphertexts are never handed to another keyring.
func (r *Resolver) keyringFor(job backends.Job) (keys.Keyring, error) {
	if job.Key.Public == "" {
		return nil, backends.InvalidArgument("job %q has no key yet; upsert the job once to create it", job.ID)
	}
	if k, ok := r.keyrings[job.Key.Kind]; ok {
		return k, nil
	}
	kinds := make([]string, 0, len(r.keyrings))
	for kind := range r.keyrings {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	return nil, backends.Unavailable(nil, "job %q's key is a %s key, but this server runs only the %s keyring(s); %s",
		job.ID, backends.KeyKindName(job.Key.Kind), strings.Join(kinds, " and "), startWith(job.Key.Kind))
}

// startWith tells the operator how to run a server that holds kind.
func startWith(kind string) string {
	switch kind {
	case "vault":
		return "start the server with --keys vault://<host>:8200?mount=...&prefix=... (the server's Vault token in VAULT_TOKEN)"
	case "":
		return "create the job's key again"
	default:
		return "start the server with the " + kind + " keyring (--keys)"
	}
}

// secret resolves DatasetAccess.secret: null without a job key in the
// request, FORBIDDEN for a principal that may not operate the claim's job;
// the keyring refuses a key that is not the job's (FORBIDDEN).
func (r *Resolver) secret(ctx context.Context, a *model.DatasetAccess) (*string, error) {
	if auth.JobKeyFrom(ctx) == "" {
		return nil, nil
	}
	job := tokenJob(a.ClaimToken)
	if p, _ := auth.PrincipalFrom(ctx); !p.CanOperate(job) {
		return nil, backends.Forbidden("only admins and runners of job %q may read its secrets", job)
	}
	secrets, err := r.loadersFrom(ctx).secrets.Load(ctx, job)
	if err != nil {
		return nil, err
	}
	s, ok := secrets[a.Dataset]
	if !ok {
		return nil, nil
	}
	return &s, nil
}

// beforeClaim decrypts job's secrets ahead of a claim when the caller
// presents a job key and selects a secret in the claim, so that a failure
// to decrypt answers before anything is claimed; the secret fields then
// read the response's cached result.
func (r *Resolver) beforeClaim(ctx context.Context, job string) error {
	if auth.JobKeyFrom(ctx) == "" || !selectsSecret(ctx) {
		return nil
	}
	_, err := r.loadersFrom(ctx).secrets.Load(ctx, job)
	return err
}

// selectsSecret reports whether the current Claim-typed field selects
// output.secret or inputs.secret (fragments and @skip/@include applied).
// Outside a GraphQL operation it answers true.
func selectsSecret(ctx context.Context) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !graphql.HasOperationContext(ctx) {
		return true
	}
	op := graphql.GetOperationContext(ctx)
	for _, f := range graphql.CollectFields(op, fc.Field.Selections, []string{"Claim"}) {
		if f.Name != "output" && f.Name != "inputs" {
			continue
		}
		for _, g := range graphql.CollectFields(op, f.Selections, []string{"DatasetAccess"}) {
			if g.Name == "secret" {
				return true
			}
		}
	}
	return false
}

// fetchSecrets decrypts, for each job, the credentials it holds for the
// datasets it reads and writes: one Keyring.Decrypt call per job, with the
// job key the caller presented.
func (r *Resolver) fetchSecrets(ctx context.Context, jobs []string) ([]map[string]string, []error) {
	out := make([]map[string]string, len(jobs))
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		out[i], errs[i] = r.decryptJob(ctx, j)
	}
	return out, errs
}

func (r *Resolver) decryptJob(ctx context.Context, jobID string) (map[string]string, error) {
	job, err := r.job(ctx, jobID)
	if err != nil {
		return nil, err
	}
	creds, err := r.loadersFrom(ctx).creds.Load(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	uses := append([]string{job.Output}, job.Inputs...)
	var datasets []string
	var ciphertexts [][]byte
	for _, c := range creds {
		if !slices.Contains(uses, c.Dataset) {
			continue
		}
		datasets = append(datasets, c.Dataset)
		ciphertexts = append(ciphertexts, c.Ciphertext)
	}
	secrets := make(map[string]string, len(datasets))
	if len(ciphertexts) == 0 {
		return secrets, nil
	}
	k, err := r.keyringFor(job)
	if err != nil {
		return nil, err
	}
	for _, c := range creds {
		if !slices.Contains(datasets, c.Dataset) {
			continue
		}
		if err := backends.CheckCredentialKey(job, c); err != nil {
			return nil, err
		}
	}
	plain, err := k.Decrypt(ctx, job.ID, job.Key.Public, auth.JobKeyFrom(ctx), ciphertexts)
	if err != nil {
		return nil, err
	}
	if len(plain) != len(datasets) {
		return nil, errors.New("keyring returned a different number of plaintexts than ciphertexts")
	}
	for i, d := range datasets {
		secrets[d] = string(plain[i])
	}
	return secrets, nil
}
