package faultproxy

import "errors"

// ErrClosed is returned by Set on a proxy that has been closed.
var ErrClosed = errors.New("faultproxy: proxy closed")
