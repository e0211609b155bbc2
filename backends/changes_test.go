package backends

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends/partition"
)

// TestBeforeForAPI: a change's value before is shown with the API's field
// names, in the stored order, its values (env names, partition
// definitions) untouched; what is not JSON is shown as stored.
func TestBeforeForAPI(t *testing.T) {
	j := Job{ID: "report", Inputs: []string{"orders"}, Output: "daily", Env: []EnvVar{{Name: "SHOP_DIR", Value: "/x<y>"}},
		MaxAttempts: 3, LeaseSeconds: 600, Key: JobKey{Kind: "age", Public: "age1xyz"}}
	stored, err := json.Marshal(j)
	require.NoError(t, err)
	got := string(BeforeForAPI(stored))
	require.Contains(t, got, `{"id":"report","description":"","inputs":["orders"],"output":"daily","env":[{"name":"SHOP_DIR","value":"/x\u003cy\u003e"}],"maxAttempts":3,"leaseSeconds":600,`)
	require.Contains(t, got, `"key":{"kind":"age","public":"age1xyz"}`)
	require.NotContains(t, got, `"ID"`)
	var back map[string]any
	require.NoError(t, json.Unmarshal([]byte(got), &back), got)

	def := partition.Def{Kind: partition.Daily, Start: "2026-01-01"}
	ds, err := json.Marshal(Dataset{ID: "daily", URL: "s3://x", Partitions: &def})
	require.NoError(t, err)
	got = string(BeforeForAPI(ds))
	require.Contains(t, got, `{"id":"daily","description":"","url":"s3://x",`)
	require.Contains(t, got, `"partitions":{"kind":"DAILY","start":"2026-01-01"`)

	for _, s := range []string{"", "not json", `{"A":"unterminated`, `{"a":1}`} {
		require.Equal(t, s, string(BeforeForAPI([]byte(s))), "%q", s)
	}
	// A value that looks like a key, with escapes, stays a value.
	require.Equal(t, `{"env":[{"name":"X","value":"\"Key\": 1"}],"id":"j"}`,
		string(BeforeForAPI([]byte(`{"Env":[{"Name":"X","Value":"\"Key\": 1"}],"ID":"j"}`))))
	require.Equal(t, `{"job":"j","dataset":"d"}`, string(BeforeForAPI([]byte(`{"job":"j","dataset":"d"}`))))
	for in, want := range map[string]string{"ID": "id", "URL": "url", "MaxAttempts": "maxAttempts", "URLPath": "urlPath", "kind": "kind", "A": "a", "OutputKey": "outputKey"} {
		b := []byte(in)
		apiName(b)
		require.Equal(t, want, string(b), in)
	}
}
