// Package gold speaks Gold's SSSRMAP3 protocol, so that Gold's clients
// (greserve, gcharge, gbalance...) and the Maui and Moab schedulers
// (AMCFG[bank] TYPE=GOLD) talk to ingot unchanged. The contract is the
// shared specification spec/gold-sssrmap3.md; this package is its codec
// and server, strict and bounded: whatever a client sends gets a reply
// with a status code and a message, never a crash.
//
// # Framing
//
// One request per TCP connection: an HTTP/1.1 POST to /SSSRMAP3 (or
// /SSSRMAP, or /gold), with no Host header needed, whose payload is one
// chunk of Transfer-Encoding: chunked, or a Content-Length. ReadPayload
// reads exactly the announced length and no more: Gold's client writes
// "0\r\n" straight after the payload, Maui writes "chunked;", then "\r\n"
// and a NUL and no terminator, so a reader waiting for a proper chunked
// ending would wait for ever. The reply (WriteReply) is framed as Gold's
// server framed it, always 200 OK: the status is in the XML. Then the
// connection is closed, after reading what the client still sends for a
// moment (a close with unread input resets the connection, which can
// destroy the reply on its way).
//
// Bounds: a request must arrive whole within Server.ReadTimeout (a slow
// client is answered 242 and cut off), its payload is at most
// Server.MaxPayload bytes (refused before it is read), its head at most 64
// lines of 4 KiB, its XML at most 10 elements deep and 10,000 elements.
//
// # The envelope and the signature
//
//	<Envelope><Body><Request action="Reserve" actor="slurm">...</Request></Body>
//	<Signature><DigestValue>...</DigestValue><SignatureValue>...</SignatureValue>
//	<SecurityToken type="Symmetric"></SecurityToken></Signature></Envelope>
//
// DigestValue is base64(SHA-1(the Body element's bytes as received, from
// "<Body" to "</Body>")) and SignatureValue base64(HMAC-SHA1(key, the 20
// bytes of the digest)). The digest is checked on the raw bytes, never on
// a re-encoding: a Body changed in any byte fails (424), and nothing is
// done. The XML is read strictly (ParseMessage, Message.Request): UTF-8,
// no DOCTYPE (so no entities but XML's own), no namespaces, no attribute
// or Data field twice, no unknown element. Maui's quirks are accepted: the
// Signature before the Body, attributes of its own on the Envelope and the
// Body, no XML declaration, no SecurityToken.
//
// A key is text, as Gold's auth_key file and Maui's CSKEY hold it: its
// bytes are the HMAC key. SSSRMAP carries no key id: the Handler finds the
// key by trying its clients' keys (Message.SignedWith).
//
// # Replies and codes
//
// A Response has a Value (Success, Warning or Failure), a Code, a Message,
// a Count (the amount of a reservation, charge or quote, else the number
// of rows) and Data rows. A reply to a signed request is signed with the
// same key, as Gold's server did: Gold's clients check a reply's signature
// when it has one. The codes are the constants of type Code.
package gold
