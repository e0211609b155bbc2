// Package model holds the Go types the GraphQL schema binds to where the
// backends package has none: views assembled by the resolvers rather than
// stored. Entity types (Dataset, Job, StatusRow, Claim, ...) bind to the
// backends types directly (gqlgen.yml autobinds both packages).
package model

import (
	"time"

	"github.com/chunklock/chunklock/backends"
)

// DatasetAccess is everything needed to reach one chunk of a dataset inside
// a claim: the dataset's connection string and its location with the dataid
// substituted. Its secret is resolved on demand (resolvers/secrets.go), for
// callers presenting the job key of the claim named by ClaimToken.
type DatasetAccess struct {
	Dataset    string
	DataID     string
	URL        string
	Connection string
	Location   string
	// Dimensions are the dataid's values by dimension (none for a
	// one-dimensional dataset).
	Dimensions []backends.DimensionValue
	// ClaimToken is the token of the claim this access belongs to; the
	// secret resolver uses it to find the claim's job and credentials.
	ClaimToken string
}

// TokenResult is backends.TokenResult as the API answers it: the error as
// its code alone (a client sees no more of an INTERNAL one), null when ok.
type TokenResult struct {
	Token          string
	OK             bool
	Code           *string
	LeaseExpiresAt *time.Time
}
