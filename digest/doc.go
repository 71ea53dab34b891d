// Package digest tells people what changed in the accounts and projects
// they look after: where each bank user's digests go (Contacts), and the
// digests themselves (docs/notifications.md).
//
// # Contacts
//
// A bank user's contact is an email address, a webhook URL, or both, and
// an opt-out. Contacts are records of kind "contact" keyed by the user's
// name (ledger.Record), journaled like schedules: no new table or bucket,
// so no new schema version. A user sets its own email address and
// opt-out; a webhook URL, which the server posts to, is the admin's to
// set.
package digest
