package command

// Shutting down: SHUTDOWN hands a request to main through the Host; the
// runtime holds the client's later requests until main decides (package
// server's shutdown.go tells the whole sequence).

// ShutdownRequest is one SHUTDOWN command waiting for its outcome.
type ShutdownRequest struct {
	// Save is what the request asked about the final snapshot: 0 as
	// configured, -1 NOSAVE, 1 SAVE.
	Save int
	// Force asks to exit even when the final save fails.
	Force bool

	client *Client
	done   chan struct{} // closed by Refuse
}

// Refuse answers the request with Redis's error and lets its connection
// run the requests it sent after SHUTDOWN. Call it after Resume.
func (r *ShutdownRequest) Refuse() {
	close(r.done)
	r.client.Peer.Wake()
}

// ShutdownOutcome is the runtime's check for a connection waiting for its
// SHUTDOWN: false while main has not decided (the connection runs nothing
// more); once refused, it writes the error and clears the wait. A
// connection whose SHUTDOWN succeeds is closed with the server.
func (c *Client) ShutdownOutcome() bool {
	r := c.Shutdown
	select {
	case <-r.done:
	default:
		return false
	}
	c.Shutdown = nil
	c.WriteError(errShutdownFailed)
	return true
}

// Decided returns a channel closed once r is refused. A request that
// succeeds is never answered: its connection closes with the server.
func (r *ShutdownRequest) Decided() <-chan struct{} { return r.done }
