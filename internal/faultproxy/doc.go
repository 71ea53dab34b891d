// Package faultproxy is a TCP proxy that injects network faults, for
// tests that run real servers: every link between two banks in
// make e2e-multisite goes through one. A Proxy listens on a loopback
// port and forwards each connection it accepts to its target; each
// direction (Up: from the connecting side to the target; Down: back) has
// a fault of its own, switched at run time with Set and taking effect on
// the next bytes that direction carries:
//
//   - Drop closes the connection (both ends see an ordinary close) instead
//     of forwarding the bytes;
//   - Reset closes it with a TCP reset (SO_LINGER 0): the other ends read
//     "connection reset by peer";
//   - Delay forwards each read's bytes after a pause;
//   - BlackHole holds the bytes and forwards nothing, keeping the
//     connection open, as a partition does where TCP retransmits into
//     the void: the ends time out, or, if the fault is healed first, the
//     bytes go on (TCP delivers a stream whole or not at all, so nothing
//     held is thrown away).
//
// A connection accepted while Up is Drop or Reset is closed or reset at
// once; one accepted while Up is BlackHole is kept and nothing is
// forwarded, as a connect to a partitioned host that the proxy (the
// near end's kernel) accepted. Faults in Down act on the target's
// answers: a request delivered, its answer lost.
//
// The proxy is test support: the product never imports it.
package faultproxy
