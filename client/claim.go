package client

import (
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Claim is the document a runner gets for one claimed chunk: the seeds'
// "single JSON string parsed by a script utility". Field names follow the
// GraphQL Claim type. The runner package turns it into the job process's
// environment.
type Claim struct {
	Token          string          `json:"token"`
	Job            string          `json:"job"`
	DataID         string          `json:"dataid"`
	Attempt        int             `json:"attempt"`
	Executor       string          `json:"executor"`
	Fence          int64           `json:"fence"`
	LeaseExpiresAt time.Time       `json:"leaseExpiresAt"`
	Output         DatasetAccess   `json:"output"`
	Inputs         []DatasetAccess `json:"inputs"`
	Env            []EnvVar        `json:"env"`
}

// DatasetAccess locates one chunk of a dataset; Secret is set only when the
// runner presented the job's key.
type DatasetAccess struct {
	Dataset    string `json:"dataset"`
	DataID     string `json:"dataid"`
	URL        string `json:"url"`
	Connection string `json:"connection"`
	Location   string `json:"location"`
	// Dimensions are the dataid's values by dimension (SPEC §10), empty
	// for a one-dimensional dataset.
	Dimensions []backends.DimensionValue `json:"dimensions,omitempty"`
	Secret     *string                   `json:"secret"`
}
