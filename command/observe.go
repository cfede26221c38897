package command

// What monitoring (the /metrics endpoint) reads of the engine at scrape
// time: the counters INFO reports, without counting a call.

// Info returns the text INFO gives for sections (none: INFO's default) as
// a client would get it, without counting a call. It locks every shard:
// the caller must hold none.
func (e *Engine) Info(sections ...string) string {
	c := &Client{eng: e, proto: 2, Authed: true, Addr: "info", LocalAddr: "info"}
	c.now = e.store.Now()
	c.nowMs = c.now / 1e6
	args := make([][]byte, len(sections))
	for i, s := range sections {
		args[i] = []byte(s)
	}
	e.store.LockAll()
	defer e.store.UnlockAll()
	return string(infoText(c, args))
}

// CommandStat is one command's INFO commandstats counters.
type CommandStat struct {
	Name                          string // as INFO shows it: "config|get" for a subcommand
	Calls, Usec, Rejected, Failed int64
}

// CommandStats returns the counters of every command that has any, in
// name order. Connections publish theirs at the end of each batch.
func (e *Engine) CommandStats() []CommandStat {
	var out []CommandStat
	for _, cmd := range sortedCommands() {
		s := CommandStat{Name: cmd.Name, Calls: cmd.calls.Load(), Usec: cmd.usec.Load(),
			Rejected: cmd.rejected.Load(), Failed: cmd.failed.Load()}
		if s.Calls != 0 || s.Rejected != 0 || s.Failed != 0 {
			out = append(out, s)
		}
	}
	return out
}
