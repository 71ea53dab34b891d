// Package metrics is the Prometheus metrics of ingot serve, in the
// official client library's exposition format:
//
//	ingot_http_requests_total{endpoint, method, code}   counter
//	ingot_http_request_duration_seconds{endpoint}       histogram
//	ingot_liens_open                                    gauge
//	ingot_commit_batch_size                             histogram of Update calls per write and sync of the log
//	ingot_commit_duration_seconds                       histogram of the times of those writes, their groups included
//	ingot_bank_filesystem_avail_bytes                   gauge: space left on the file system of the bank's file
//	ingot_bank_filesystem_size_bytes                    gauge: that file system's size
//
// with the Go runtime's (go_*) and the process's (process_*) figures.
//
// Each server has a registry of its own, not the library's global one, so
// that tests run several servers side by side.
//
// Labels are bounded, whatever clients send: the endpoint is a path of
// the server's route table or "unknown", never the path a client made up;
// the method is one of HTTP's, lower case, or "unknown" (promhttp's rule);
// the code is a status the server answered. No label names a client, an
// account or a key, and no figure is finer than the whole bank, which is
// why the page may be served without authentication (docs/server.md).
package metrics
