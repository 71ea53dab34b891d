// Package warning says what a node's balance should warn its readers of
// before it is trouble: an active allocation that ends within Soon, and
// credits used up. The web page and `ingot balance` show the same warnings,
// made here from the balance the API answers.
package warning
