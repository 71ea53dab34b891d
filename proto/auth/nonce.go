package auth

import (
	"crypto/sha256"
	"fmt"
)

// nonceKey identifies a nonce in the cache: the first 128 bits of SHA-256
// of its bytes, so that every entry is small and the same size whatever the
// nonce's length, and a nonce in upper and lower case hex is one nonce.
// Accidental collisions are negligible (2^-128 per pair).
type nonceKey [16]byte

func keyOfNonce(nonce []byte) nonceKey {
	sum := sha256.Sum256(nonce)
	return nonceKey(sum[:16])
}

// nonceCache remembers accepted nonces for as long as a request carrying one
// could pass the date check: until its date leaves the window, date + window.
// (Until now + window would not do: a request dated ahead of the server's
// clock stays acceptable for longer than that.)
//
// Memory is bounded twice: entries are forgotten once expired, and add
// refuses a nonce when max entries are held rather than grow. Expiry costs
// in proportion to what expires: entries are also grouped by their expiry
// second, and each add first drops the groups whose second has passed.
type nonceCache struct {
	expiry   map[nonceKey]int64   // nonce → its expiry, in Unix seconds
	byExpiry map[int64][]nonceKey // expiry second → the nonces expiring then
	swept    int64                // every group before this second is dropped
}

// add records nonce, whose request expires at the Unix second expires,
// unless it is already recorded (ErrReplay) or max nonces are
// (ErrNonceCacheFull). now is the current Unix second.
func (c *nonceCache) add(nonce nonceKey, expires, now int64, max int) error {
	c.forgetBefore(now)
	if _, seen := c.expiry[nonce]; seen {
		return ErrReplay
	}
	if len(c.expiry) >= max {
		return fmt.Errorf("%w (%d nonces remembered, the most allowed)", ErrNonceCacheFull, len(c.expiry))
	}
	if c.expiry == nil {
		c.expiry = make(map[nonceKey]int64)
		c.byExpiry = make(map[int64][]nonceKey)
	}
	c.expiry[nonce] = expires
	c.byExpiry[expires] = append(c.byExpiry[expires], nonce)
	return nil
}

// forgetBefore drops the nonces expiring before second now. Their requests'
// dates are out of the window, so the date check refuses a replay. (At
// second now itself a request may still be acceptable, within the second.)
func (c *nonceCache) forgetBefore(now int64) {
	if now <= c.swept {
		// After the clock steps back, sweep again from there, or the
		// nonces added meanwhile would expire in seconds already swept.
		c.swept = now
		return
	}
	// Step through the seconds passed, or through the groups if there are
	// fewer of them (the first call, or after a long quiet spell).
	if now-c.swept <= int64(len(c.byExpiry)) {
		for second := c.swept; second < now; second++ {
			c.forget(second)
		}
	} else {
		for second := range c.byExpiry {
			if second < now {
				c.forget(second)
			}
		}
	}
	c.swept = now
}

func (c *nonceCache) forget(second int64) {
	for _, nonce := range c.byExpiry[second] {
		delete(c.expiry, nonce)
	}
	delete(c.byExpiry, second)
}
