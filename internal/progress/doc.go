// Package progress shows how far long work has gone (a backup, a full
// audit, a migration): on a terminal, a line redrawn in place with the
// rate and the time left; elsewhere (a log, cron's mail), a line every
// interval (INGOT_PROGRESS_INTERVAL, 10 s by default), so that a log shows
// the work is alive without drowning in redraws, and work shorter than
// that says nothing. The command prints its own summary
// when the work ends.
package progress
