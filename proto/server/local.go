package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	// The package name user is the role constant of server.go.
	osuser "os/user"
	"strconv"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/munge"
)

// Local users: a request with a MUNGE credential, or one on the server's
// Unix socket without an Authorization header, comes from a uid. The uid's
// local account (os/user) names the bank user it acts as, through a user
// client named "munge:<user>" or "socket:<user>" (':' is in no registered
// client's name) with the rights of any user client: reading the nodes the
// bank user is a member or manager of. An unknown uid, or an account that
// is no active bank user, is refused (401). Accounts are looked up as the
// C library does (NSS: /etc/passwd, LDAP, SSSD) in a build with cgo, and
// in /etc/passwd alone without.
//
// On the socket, root and the server's own uid act as admin, "socket:<their
// account>": they can read and write the database file anyway, and so can
// administer the bank without a key. Over MUNGE they get nothing special: a
// credential proves a uid on any node of the MUNGE realm, and root on any
// node is not the bank's administrator.

// identify returns the client request r acts as: the key's client for a
// signed request, the credential's user for a MUNGE request, and on the
// Unix socket, without an Authorization header, the peer's. A request on
// the socket with an Authorization header is checked like any other, so a
// scheduler's key works there too.
func (s *Server) identify(ctx context.Context, r *http.Request, body []byte) (clients.Client, error) {
	if p, onSocket := r.Context().Value(peerKey{}).(socketPeer); onSocket && len(r.Header.Values("Authorization")) == 0 {
		return s.peerClient(ctx, p)
	}
	if munge.Uses(r) {
		return s.mungeClient(ctx, r, body)
	}
	return s.keyClient(r, body)
}

// mungeClient checks a MUNGE credential and returns its uid's user client.
func (s *Server) mungeClient(ctx context.Context, r *http.Request, body []byte) (clients.Client, error) {
	if s.munge == nil {
		return clients.Client{}, api.Errorf(api.CodeUnauthenticated,
			"auth: this server does not accept MUNGE credentials (ingot serve --munge enables them); sign the request with a key")
	}
	uid, err := s.munge.Verify(r, body)
	if err != nil {
		return clients.Client{}, err
	}
	return s.localUser(ctx, "munge", "MUNGE credential", uid)
}

// peerClient returns the client of a socket peer: admin for root and the
// server's own uid, else its uid's user client.
func (s *Server) peerClient(ctx context.Context, p socketPeer) (clients.Client, error) {
	if p.err != nil {
		return clients.Client{}, fmt.Errorf("reading the credentials of the socket's peer: %w", p.err)
	}
	if p.uid == 0 || p.uid == uint32(os.Getuid()) {
		name := strconv.FormatUint(uint64(p.uid), 10)
		if account, err := osuser.LookupId(name); err == nil {
			name = account.Username
		}
		return clients.Client{Name: "socket:" + name, Role: clients.RoleAdmin}, nil
	}
	return s.localUser(ctx, "socket", "socket peer", p.uid)
}

// localUser returns the user client, named via:<user>, of the bank user
// named like uid's local account; what says where the uid came from, for
// refusals.
func (s *Server) localUser(ctx context.Context, via, what string, uid uint32) (clients.Client, error) {
	account, err := osuser.LookupId(strconv.FormatUint(uint64(uid), 10))
	if _, unknown := errors.AsType[osuser.UnknownUserIdError](err); unknown {
		return clients.Client{}, api.Errorf(api.CodeUnauthenticated, "auth: %s of uid %d: no local account on the server has that uid", what, uid)
	}
	if err != nil {
		return clients.Client{}, fmt.Errorf("looking up the account of uid %d: %w", uid, err)
	}
	name := account.Username
	u, found, err := s.bankUser(ctx, name)
	switch {
	case err != nil:
		return clients.Client{}, err
	case !found:
		return clients.Client{}, api.Errorf(api.CodeUnauthenticated, "auth: %s of local user %s (uid %d): %s is not a bank user", what, name, uid, name)
	case !u.Active:
		return clients.Client{}, api.Errorf(api.CodeUnauthenticated, "auth: %s of local user %s (uid %d): bank user %s is inactive", what, name, uid, name)
	}
	return clients.Client{Name: via + ":" + name, Role: clients.RoleUser, Scope: []string{name}}, nil
}

// bankUser reads a bank user.
func (s *Server) bankUser(ctx context.Context, name string) (u ledger.User, found bool, err error) {
	err = s.ledger.View(ctx, func(tx ledger.Tx) (err error) {
		u, found, err = tx.User(name)
		return err
	})
	if err != nil {
		return u, false, fmt.Errorf("reading bank user %s: %w", name, err)
	}
	return u, found, nil
}

// peerKey is the context key of a Unix-socket connection's peer.
type peerKey struct{}

// socketPeer is the process at the other end of a Unix-socket connection, as it
// was when it connected.
type socketPeer struct {
	uid uint32
	err error // the credentials could not be read
}

// ConnContext is the http.Server ConnContext of a server listening on a
// Unix socket: it records the uid of each socket connection's peer
// (SO_PEERCRED), by which requests without an Authorization header are
// known. Other connections are left as they are, so that their requests
// must be signed.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	uid, err := peerUID(uc)
	return context.WithValue(ctx, peerKey{}, socketPeer{uid: uid, err: err})
}
