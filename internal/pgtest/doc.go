// Package pgtest runs PostgreSQL servers for tests: Start starts one of a
// test's own (initdb into a temporary directory, postgres on a free port
// of 127.0.0.1 and a socket in that directory), stopped when the test
// ends; DB hands a test a new database, with a role of its own and a
// password, on a server shared by the test package, so that a suite of
// many tests starts PostgreSQL once. A package that calls DB runs its
// tests through Main (from TestMain), which stops the shared server after
// them.
//
// The servers run as the user postgres when the test runs as root
// (initdb and postgres refuse root), otherwise as the test's own user.
// The binaries are those of the directory INGOT_PG_BIN names, else those
// on PATH, else those of the newest /usr/lib/postgresql/N/bin (where
// Debian puts them). Without them
// tests skip, except under INGOT_E2E=1, where they fail: CI must not pass
// by skipping.
//
// Nothing outlives the test process: a server is stopped (fast shutdown,
// then SIGKILL) at cleanup and its directory removed, and the kernel kills
// it if the test process dies first (its parent-death signal); what such
// a server leaves (its directory, its System V shared memory) the next
// test process to start one removes, knowing it by a lock its own
// process no longer holds, so that test processes running side by side
// leave each other's servers alone. Servers run with fsync off: a test
// server's data dies with it anyway.
//
// Server.Standby starts a synchronous standby of a server, Kill kills a
// server as the loss of its machine would, and Promote makes a standby
// the primary: what a failover test needs.
package pgtest
