package gold

import (
	"net/http"
	"strconv"

	"github.com/ingot-hpc/ingot/proto/api"
)

// Gold numbers its accounts, and its clients name them by number
// (gdeposit -a 1, gbalance's Id column, the Account of an allocation). An
// ingot account's number is ledger.NumberAccounts': its place in the
// order the accounts were made, the same for every client. A request may
// name an account by number or by name; replies give the number where
// Gold's gave its id.

// accountIDFields are the field of each object's rows that is an
// account's id.
var accountIDFields = map[string]string{
	"Account": "Id", "Allocation": "Account", joinObject: "Account", "Transaction": "Account", "Reservation": "Account",
	"AccountProject": "Account", "AccountUser": "Account", "AccountMachine": "Account",
}

// accountNumbers are the numbers of the accounts the client reads, asked
// once a request.
func (c *call) accountNumbers() (map[string]uint64, error) {
	if c.numbers == nil {
		r, err := read[api.AccountNumbersResponse](c, http.MethodGet, api.PathAccountNumbers, api.NoQuery{})
		if err != nil {
			return nil, err
		}
		c.numbers = r.Numbers
	}
	return c.numbers, nil
}

// accountID is the id Gold's clients know an account by, its number;
// an empty name, or one the client does not read, as it is.
func (c *call) accountID(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	numbers, err := c.accountNumbers()
	if n, ok := numbers[name]; ok {
		return idText(n), err
	}
	return name, err
}

// accountName is the account an id names: the account of that number,
// else the name given (names keep working, and an account named with
// digits is found by its name when no account has that number).
func (c *call) accountName(id string) (string, error) {
	if _, err := strconv.ParseUint(id, 10, 64); err != nil || id == "" {
		return id, nil
	}
	numbers, err := c.accountNumbers()
	if err != nil {
		return "", err
	}
	for name, n := range numbers {
		if idText(n) == id {
			return name, nil
		}
	}
	return id, nil
}
