// Package decimals adds and subtracts decimals without the allocations that
// a zero on either side costs shopspring/decimal: a sum starts from
// decimal.Zero (exponent 0) and an account's figures carry the currency's
// exponent, so Add rescaled one side into a new big.Int before adding into
// another (and a zero Decimal{} read from a map allocated one more to be
// initialised). The lien and charge path made about ten such rescales a
// cycle. The results are equal to Add's and Sub's (Equal, String and JSON
// the same); only the exponent kept for a zero operand may differ.
package decimals
