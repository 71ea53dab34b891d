package gold

import (
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/shopspring/decimal"
)

// Object Account: Gold's container of credits is an ingot account. Gold
// names it by Id (its number, or here its name too), Name or Account; a
// Project names its account.

// account is the account a request names, with prefix "From" or "To" for
// a transfer's ends.
func (c *call) account(prefix string) (string, error) {
	names := []string{prefix + "Id", prefix + "Account", prefix + "Project"}
	if prefix == "" {
		names = append(names, "Name")
	}
	v, err := c.firstOf(names...)
	if err == nil && v == "" {
		err = Errorf(CodeBadData, "%s %s needs one of %v", c.Object, c.Action, names)
	}
	if err != nil {
		return "", err
	}
	name, err := c.accountName(v)
	return ledger.AccountOf(name), err
}

// deposit adds credits: a new allocation (StartTime and EndTime, Gold's
// infinities meaning none; CreditLimit; MachineName), or a top-up of
// Allocation.
func deposit(c *call) (Response, error) {
	if err := c.checkNames("Id", "Name", "Account", "Project", "Amount", "CreditLimit", "StartTime", "EndTime", "Allocation", "MachineName", "Description"); err != nil {
		return Response{}, err
	}
	var spec api.DepositRequest
	var err error
	if spec.Account, err = c.account(""); err != nil {
		return Response{}, err
	}
	if spec.Amount, err = c.amount("Amount", true); err != nil {
		return Response{}, err
	}
	if spec.CreditLimit, err = c.amount("CreditLimit", true); err != nil {
		return Response{}, err
	}
	if spec.Start, err = c.when("StartTime"); err != nil {
		return Response{}, err
	}
	if spec.End, err = c.when("EndTime"); err != nil {
		return Response{}, err
	}
	if spec.Allocation, err = c.allocation(); err != nil {
		return Response{}, err
	}
	if spec.Machine, err = c.text("MachineName"); err != nil {
		return Response{}, err
	}
	if spec.Description, err = c.text("Description"); err != nil {
		return Response{}, err
	}
	r, err := change[ledger.Receipt](c, api.PathDeposits, spec)
	if err != nil {
		return Response{}, err
	}
	return receipt(r, spec.Amount.String(), fmt.Sprintf("Successfully deposited %s credits into account %s", spec.Amount, spec.Account)), nil
}

// withdraw takes credits out, in debit order (or from Allocation).
func withdraw(c *call) (Response, error) {
	if err := c.checkNames("Id", "Name", "Account", "Project", "Amount", "Allocation", "Description"); err != nil {
		return Response{}, err
	}
	var spec api.WithdrawRequest
	var err error
	if spec.Account, err = c.account(""); err != nil {
		return Response{}, err
	}
	if spec.Amount, spec.Allocation, spec.Description, err = c.moveTerms(); err != nil {
		return Response{}, err
	}
	r, err := change[ledger.Receipt](c, api.PathWithdrawals, spec)
	if err != nil {
		return Response{}, refused(err, "Insufficient balance to withdraw %s from account %s", spec.Amount, spec.Account)
	}
	return receipt(r, spec.Amount.String(), fmt.Sprintf("Successfully withdrew %s credits from account %s", spec.Amount, spec.Account)), nil
}

// transfer moves credits between accounts, each piece keeping its
// allocation's dates.
func transfer(c *call) (Response, error) {
	if err := c.checkNames("FromId", "FromAccount", "FromProject", "ToId", "ToAccount", "ToProject", "Amount", "Allocation", "Description"); err != nil {
		return Response{}, err
	}
	var spec api.TransferRequest
	var err error
	if spec.From, err = c.account("From"); err != nil {
		return Response{}, err
	}
	if spec.To, err = c.account("To"); err != nil {
		return Response{}, err
	}
	if spec.Amount, spec.Allocation, spec.Description, err = c.moveTerms(); err != nil {
		return Response{}, err
	}
	r, err := change[ledger.Receipt](c, api.PathTransfers, spec)
	if err != nil {
		return Response{}, refused(err, "Insufficient balance to transfer %s from account %s", spec.Amount, spec.From)
	}
	return receipt(r, spec.Amount.String(), fmt.Sprintf("Successfully transferred %s credits from account %s to account %s", spec.Amount, spec.From, spec.To)), nil
}

// moveTerms are what a withdrawal or a transfer moves: its Amount, the
// Allocation it is limited to (0: any), and its Description.
func (c *call) moveTerms() (amount decimal.Decimal, allocation uint64, description string, err error) {
	if amount, err = c.amount("Amount", false); err != nil {
		return amount, 0, "", err
	}
	if allocation, err = c.allocation(); err != nil {
		return amount, 0, "", err
	}
	description, err = c.text("Description")
	return amount, allocation, description, err
}

// allocation is the Allocation given, 0 when none is.
func (c *call) allocation() (uint64, error) { return c.number("Allocation") }

// receipt answers a change of amounts with the allocations it changed.
func receipt(r ledger.Receipt, count, message string) Response {
	data := make([]Element, len(r.Allocations))
	for i, a := range r.Allocations {
		data[i] = record("Allocation", field("Id", idText(a.ID)), field("Account", a.Account), field("Amount", a.Amount.String()),
			field("CreditLimit", a.CreditLimit.String()), field("StartTime", epoch(a.Start)), field("EndTime", epoch(a.End)), field("MachineName", a.Machine))
	}
	return Response{Code: CodeSuccess, Message: message, Count: count, Data: data}
}
