package resolvers

// Regenerate graph/ and the resolver stubs from schema.graphqls and
// schema/*.graphqls (gqlgen finds ../gqlgen.yml by itself). Implementations
// in resolvers/*.resolvers.go are kept.
//go:generate go tool gqlgen generate
