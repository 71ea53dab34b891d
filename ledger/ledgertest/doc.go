// Package ledgertest helps test code that uses a ledger: NewBank opens a
// temporary bank whose journal is audited when the test ends, and
// Conformance is the suite every ledger.Store engine must pass.
package ledgertest
