// Package warning says what a node's balance should warn its readers of
// before it is trouble: an active allocation that ends within Soon, credits
// used up, and (from a node's forecast) credits that run out at a recent
// pace before the allocations end. The web page and `ingot balance` show the same warnings,
// made here from the balance the API answers.
package warning
