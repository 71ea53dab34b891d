// Package report lays the bank's reports out as tables of text (a
// statement, a usage report) and writes a table as the command line prints
// it: aligned columns, '|'-separated fields (Slurm's -P), or CSV (RFC
// 4180). The command line and the web page both write with it, so that a
// statement downloaded from the page is byte for byte `ingot statement
// --csv`.
//
// Amounts are shown with the bank's precision (Amount), times in the local
// zone (LocalTime): stored times are UTC, people read their own clock.
// Cells are escaped before they are written (control characters as Go
// escapes, and '|' in -P), so that a stored string cannot forge a line in a
// terminal or a field of -P.
package report
