package backends

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func testCatalog() *Catalog {
	ds := []Dataset{{ID: "src"}, {ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "other"}}
	jobs := []Job{
		{ID: "ja", Inputs: []string{"src"}, Output: "a"},
		{ID: "jb", Inputs: []string{"a"}, Output: "b"},
		{ID: "jc", Inputs: []string{"b", "a"}, Output: "c"},
	}
	return NewCatalog(ds, jobs)
}

func TestCatalogIndexes(t *testing.T) {
	c := testCatalog()
	require.Equal(t, "ja", c.Producer("a"))
	require.Equal(t, "", c.Producer("src"), "a source has no producer")
	require.Equal(t, []string{"jb", "jc"}, c.Consumers("a"))
	require.Empty(t, c.Consumers("c"))
	require.Equal(t, []string{"a", "b", "c", "src"}, c.Downstream("src"))
	require.Equal(t, []string{"b", "c"}, c.Downstream("b"))
	require.Equal(t, []string{"other"}, c.Downstream("other"))
	_, err := c.Job("nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = c.Dataset("nope")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestValidateJob(t *testing.T) {
	c := testCatalog()
	j, err := c.ValidateJob(Job{ID: "jd", Inputs: []string{"c", "src"}, Output: "d"})
	require.NoError(t, err)
	require.Equal(t, DefaultMaxAttempts, j.MaxAttempts)
	require.Equal(t, DefaultLeaseSeconds, j.LeaseSeconds)
	j, err = c.ValidateJob(Job{ID: "gen", Output: "d"})
	require.NoError(t, err)
	require.NotNil(t, j.Inputs, "no inputs is an empty list")
	require.Empty(t, j.Inputs)
	// Redefining a job with the same output is no second producer.
	_, err = c.ValidateJob(Job{ID: "ja", Inputs: []string{"other"}, Output: "a", MaxAttempts: 1, LeaseSeconds: 1})
	require.NoError(t, err)

	cases := []struct {
		name string
		job  Job
		err  error
	}{
		{"bad id", Job{ID: "J A", Output: "d"}, ErrInvalidArgument},
		{"no output", Job{ID: "jd"}, ErrInvalidArgument},
		{"unknown output", Job{ID: "jd", Output: "zzz"}, ErrNotFound},
		{"unknown input", Job{ID: "jd", Inputs: []string{"zzz"}, Output: "d"}, ErrNotFound},
		{"second producer", Job{ID: "jd", Inputs: []string{"src"}, Output: "b"}, ErrAlreadyExists},
		{"reads own output", Job{ID: "jd", Inputs: []string{"d"}, Output: "d"}, ErrInvalidArgument},
		{"input twice", Job{ID: "jd", Inputs: []string{"a", "a"}, Output: "d"}, ErrInvalidArgument},
		{"cycle of two", Job{ID: "jd", Inputs: []string{"c"}, Output: "src"}, ErrInvalidArgument},
		{"cycle through update", Job{ID: "ja", Inputs: []string{"c"}, Output: "a"}, ErrInvalidArgument},
		{"cycle to itself via other", Job{ID: "jb", Inputs: []string{"c"}, Output: "b"}, ErrInvalidArgument},
		{"zero lease is default, negative is not", Job{ID: "jd", Output: "d", LeaseSeconds: -1}, ErrInvalidArgument},
		{"negative attempts", Job{ID: "jd", Output: "d", MaxAttempts: -3}, ErrInvalidArgument},
		{"lease over a week", Job{ID: "jd", Output: "d", LeaseSeconds: 7*24*3600 + 1}, ErrInvalidArgument},
		{"empty env name", Job{ID: "jd", Output: "d", Env: []EnvVar{{Name: ""}}}, ErrInvalidArgument},
		{"env name with =", Job{ID: "jd", Output: "d", Env: []EnvVar{{Name: "A=1"}}}, ErrInvalidArgument},
		{"env twice", Job{ID: "jd", Output: "d", Env: []EnvVar{{Name: "A"}, {Name: "A"}}}, ErrInvalidArgument},
	}
	for _, tc := range cases {
		_, err := c.ValidateJob(tc.job)
		require.ErrorIs(t, err, tc.err, tc.name)
	}
}

func TestValidateDataset(t *testing.T) {
	require.NoError(t, ValidateDataset(Dataset{ID: "sales", Location: "s3://lake/sales/dt={dataid}/"}))
	require.NoError(t, ValidateDataset(Dataset{ID: "sales"}), "a location is optional")
	require.ErrorIs(t, ValidateDataset(Dataset{ID: "sales", Location: "s3://lake/sales/"}), ErrInvalidArgument)
	for _, id := range []string{"", "Sales", "_x", "a b", "a/b", "0123456789012345678901234567890123456789012345678901234567890123"} {
		require.ErrorIs(t, ValidateDataset(Dataset{ID: id}), ErrInvalidArgument, "%q", id)
	}
	require.NoError(t, ValidateID("job", "0"))
	require.NoError(t, ValidateID("job", "a.b-c_d"))
}
