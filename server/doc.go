// Package server is ratekv's network runtime: listeners, connections, the
// epoll event loops (one per core, on Linux) or a goroutine per client,
// the reply flushers, TLS ports and protected mode, pausing and shutting
// down. It reads requests with
// package resp, runs them on each connection's command.Client, settles
// their journal records as appendfsync demands, and writes the replies,
// and the Pub/Sub messages other clients published to it when Wake asks
// (command.Client.TakePushes). What a command means is package command's
// business.
package server
