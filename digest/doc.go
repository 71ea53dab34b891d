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
//
// # Digests
//
// Notifier.Run makes, for each recipient (a user's email or webhook, an
// admin's address or webhook), one digest at most a Rules.Period, holding
// the conditions it may read (Recipient.sees: never another's project)
// that it was not told: new, worse (Condition.Level, in halvings of what
// is left), or told Rules.Repeat ago; and the liens that expired since its
// last. A run claims each recipient in its record (kind "digest", under
// its key, journaled) before it delivers, so two runs at once send once;
// after a delivery succeeds, the record says what was told, so a restart
// sends nothing the rule does not; a delivery that fails every attempt is
// logged, not recorded, and tried at the next run. docs/notifications.md
// has the rule in full.
package digest
