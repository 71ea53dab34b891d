// Package mungetest helps test MUNGE and the local socket: Start runs a
// munged of the test's own (its key, socket, log and seed files in a
// temporary directory), so that no munged need run system-wide, and RunAs
// runs a command as another local user with setpriv, so that a test makes
// credentials and connections as that user.
//
// Without munge, unmunge, munged or setpriv, or without root for RunAs,
// tests skip, except under INGOT_E2E=1, where they fail: CI must not pass
// by skipping.
package mungetest
