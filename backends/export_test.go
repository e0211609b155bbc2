package backends

// MaxLeaders is maxLeaders, for the batching tests.
const MaxLeaders = maxLeaders
