// This directory is the dashboard's and playground's npm project, not Go
// code. This file makes it a module of its own so that ./... patterns of
// the chunklock module never walk node_modules (which the go command does
// not skip by itself).
module chunklock.invalid/ui-web
