// Package ingotproc runs ingot as processes of their own, for tests that
// exercise the real binary: Build builds it, Command runs its command
// line on one bank, and Server runs `ingot serve` on a loopback port it
// keeps across restarts, to be killed with SIGKILL, stopped and started
// again. The soak (internal/soak) and make e2e-multisite
// (internal/multisite) run their banks with it.
//
// The package is test support: the product never imports it.
package ingotproc
