// Command ingot is the allocation bank's command line: it manages accounts,
// projects, users, machines and allocations, moves credits, and reads
// balances, statements and the journal.
//
// It works locally on the bank's database file (--db, or INGOT_DB), or
// through an ingot server (--server URL, or INGOT_SERVER, with the client
// key of --key-file or INGOT_KEY_FILE). A flag given beats any variable,
// even one of another way to say the same thing: --db with INGOT_SERVER
// set works on the file, and says so (precedence.go). Each command is
// written once
// against bankService, which localBank does on the file and remoteBank
// through package proto/client; the output is the same either way. Output
// is an aligned table, or --json, or --parsable ('|'-separated, like
// Slurm's -P). Exit codes are listed in exitcodes.go and the README.
//
// The app is built by newApp, which takes its writers, so tests run the
// whole command line in-process.
package main
