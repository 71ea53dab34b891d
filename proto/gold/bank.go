package gold

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// API is the bank as the JSON API serves it, called in process for a
// client authenticated here (server.Server.Call): so a Gold request is
// allowed, checked and done exactly as the same request over the JSON API.
type API = api.Caller

// Keys lists the keys that sign Gold's messages
// (clients.Registry.GoldKeys).
type Keys interface {
	GoldKeys(ctx context.Context) ([]clients.GoldKey, error)
}

// Bank is the Handler that answers Gold's requests with ingot's bank: it
// finds the client whose key signed a message, decodes the request and
// maps it onto the API's endpoints as the client.
type Bank struct {
	API  API
	Keys Keys
	Log  *slog.Logger
}

// action answers one object's action.
type action func(*call) (Response, error)

// actions are the objects and actions implemented; every other pair is
// answered 315, naming it.
var actions = map[string]map[string]action{
	"Job": {
		"Reserve": reserve,
		"Charge":  chargeJob,
		"Quote":   quote,
		"Refund":  refund,
		"Query":   queryJobs,
	},
	"Quotation":           {"Query": queryQuotations},
	"QuotationChargeRate": {"Query": queryQuotationChargeRates},
	"Account": {
		"Deposit":  deposit,
		"Withdraw": withdraw,
		"Transfer": transfer,
		"Balance":  balance,
		"Query":    queryAccounts,
		"Create":   createAccount,
		"Modify":   modifyNode,
		"Delete":   deleteNode,
	},
	"Allocation":     {"Query": queryAllocations, "Modify": modifyAllocation},
	"User":           {"Create": createUser, "Query": queryUsers, "Modify": modifyUser, "Delete": deleteUser},
	"Machine":        {"Create": createMachine, "Query": queryMachines, "Modify": modifyMachine, "Delete": deleteMachine},
	"Project":        {"Create": createProject, "Query": queryProjects, "Modify": modifyNode, "Delete": deleteNode},
	"ProjectUser":    {"Create": createProjectUser, "Query": queryProjectUsers},
	joinObject:       {"Query": queryReservationAllocations},
	"ProjectMachine": {"Create": createProjectMachine, "Query": queryProjectMachines},
	"AccountProject": {"Query": queryAccountProjects},
	"AccountUser":    {"Query": queryAccountUsers},
	"AccountMachine": {"Query": queryAccountMachines},
	"Reservation":    {"Query": queryReservations, "Modify": modifyReservation, "Delete": deleteReservation},
	"Transaction":    {"Query": queryTransactions},
}

// ServeGold checks the signature, finds the key's client and answers the
// request as that client.
func (b *Bank) ServeGold(ctx context.Context, m *Message) Reply {
	if err := m.CheckDigest(); err != nil {
		return Reply{Response: Failure("", err)}
	}
	key, err := b.signer(ctx, m)
	if err != nil {
		return Reply{Response: b.failure("", err)}
	}
	reply := Reply{Key: key.Text, Client: key.Client.Name}
	r, err := m.Request()
	if err != nil {
		reply.Response = Failure("", err)
		return reply
	}
	reply.Object, reply.Action = r.Object, r.Action
	act, ok := actions[r.Object][r.Action]
	if !ok {
		reply.Response = Failure(r.Actor, notImplemented(r.Object, r.Action))
		return reply
	}
	c := &call{ctx: ctx, api: b.API, client: key.Client, Request: r,
		actor: "client:" + key.Client.Name + " gold:" + r.Actor, id: "gold:" + hex.EncodeToString(m.Digest)}
	resp, err := act(c)
	if err != nil {
		resp = b.failure(r.Actor, err)
	}
	resp.Actor = r.Actor
	reply.Response = resp
	return reply
}

// signer is the Gold key that signed the message. The keys are tried in
// turn, each in constant time: SSSRMAP names no key.
func (b *Bank) signer(ctx context.Context, m *Message) (clients.GoldKey, error) {
	keys, err := b.Keys.GoldKeys(ctx)
	if err != nil {
		return clients.GoldKey{}, err
	}
	for _, k := range keys {
		if m.SignedWith(k.Text) {
			return k, nil
		}
	}
	return clients.GoldKey{}, Errorf(CodeAuthentication, "the message is not signed with the key of a Gold client (ingot client add NAME --gold makes one)")
}

func notImplemented(object, act string) error {
	if _, known := actions[object]; !known {
		return Errorf(CodeNotImplemented, "object %s is not implemented; the objects are %s", object, strings.Join(slices.Sorted(maps.Keys(actions)), ", "))
	}
	return Errorf(CodeNotImplemented, "%s %s is not implemented; the actions on %s are %s", object, act, object, strings.Join(slices.Sorted(maps.Keys(actions[object])), ", "))
}

// failure is the response to err: an *Error as it is, else the API's
// error for it with Gold's code of the same meaning. A server error is
// logged with its cause, which the reply does not show.
func (b *Bank) failure(actor string, err error) Response {
	if _, ok := errors.AsType[*Error](err); ok {
		return Failure(actor, err)
	}
	e := api.FromError(err)
	code := CodeInternal
	for _, m := range codeOf {
		if slices.Contains(m.api, e.Code) {
			code = m.gold
			break
		}
	}
	if code == CodeInternal {
		b.Log.Error("gold: request failed", "error", err.Error())
	}
	return Failure(actor, Errorf(code, "%s", e.Message))
}

// codeOf maps the API's error codes to Gold's; the others are 900.
var codeOf = []struct {
	api  []api.Code
	gold Code
}{
	{[]api.Code{api.CodeInsufficientFunds}, CodeFunds},
	{[]api.Code{api.CodeInvalid, api.CodeBadJSON, api.CodeInvalidUTF8, api.CodeDuplicateKey, api.CodeKeySpelling, api.CodeControlCharacter, api.CodeTooLarge}, CodeBadData},
	{[]api.Code{api.CodeNotFound, api.CodeExists, api.CodeInactive, api.CodeRequestConflict, api.CodeNoProject, api.CodeNotMember,
		api.CodeAlreadyCharged, api.CodeRefund, api.CodeQuoteUnusable, api.CodeReservationUnusable}, CodeState},
	{[]api.Code{api.CodeForbidden}, CodeForbidden},
	{[]api.Code{api.CodeUnauthenticated}, CodeAuthentication},
	{[]api.Code{api.CodeUnavailable}, CodeUnavailable},
}

// call is one authenticated request on its way to the bank.
type call struct {
	ctx    context.Context
	api    API
	client clients.Client
	Request
	// actor is the journal's actor of a change: the client and the actor
	// the request names.
	actor string
	// id is the request id of a change: the digest of the Body, so that
	// the same request sent again (a retry, or a copy) is applied once.
	id string
	// numbers are the accounts' numbers, once asked (accountNumbers).
	numbers map[string]uint64
}

// read asks an endpoint that changes nothing.
func read[T any](c *call, method, path string, in any) (T, error) {
	return callAPI[T](c, ledger.Request{}, method, path, in)
}

// change asks an endpoint that changes the bank, under the request's id.
func change[T any](c *call, path string, in any) (T, error) {
	return callAPI[T](c, ledger.Request{Actor: c.actor, ID: c.id}, http.MethodPost, path, in)
}

func callAPI[T any](c *call, req ledger.Request, method, path string, in any) (T, error) {
	return api.CallAs[T](c.ctx, c.api, c.client, req, method, path, in)
}
