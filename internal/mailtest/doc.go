// Package mailtest runs a real mail server for tests: Debian's Exim
// (exim4-daemon-light), started on a free loopback port with a
// configuration of its own, offering STARTTLS with a certificate made for
// the test, and delivering every message to one maildir the test reads.
//
// Exim's -C (an alternate configuration) drops its privileges: run as
// root, it keeps those of its own user (Debian-exim), which owns the
// spool, log and maildir it is given; run as another user, it runs as
// that user. Without Exim the test is skipped, and fails under
// INGOT_E2E=1 (.ci/run installs it).
package mailtest
