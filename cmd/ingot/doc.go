// Command ingot is the allocation bank's command line: it manages accounts,
// projects, users, machines and allocations, moves credits, and reads
// balances, statements and the journal.
//
// It works locally on the bank's database file (--db, or INGOT_DB). Output
// is an aligned table, or --json, or --parsable ('|'-separated, like
// Slurm's -P). Exit codes are listed in exitcodes.go and docs/cli.md.
//
// The app is built by newApp, which takes its writers, so tests run the
// whole command line in-process.
package main
