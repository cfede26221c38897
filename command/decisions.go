package command

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/glob"
)

// Rate-limit decision counters (INFO ratelimit, the /metrics endpoint).
//
// Every CL.THROTTLE, CL.THROTTLEMS, CL.THROTTLEALL, SL.THROTTLE and
// SW.THROTTLE that decides counts as allowed or limited, and an allowed one
// left with at most 20 % of its limit also as near limit (envoy
// ratelimit's near_limit), under its command and the group of its key: the
// first pattern of ratelimit-metrics-groups the key matches, else "other",
// so the number of series stays bounded whatever keys clients send.
// CL.THROTTLEALL counts per limit: each limit of an allowed call as
// allowed, each limit that refused a call as limited.
//
// The counters are per shard and written under the key's shard lock, which
// the command holds anyway: no atomic operation, no shared cache line. A
// reader locks each shard in turn. A change of the patterns publishes a new
// table without locking anything; each shard's counts move over to it (by
// group name; a group that is gone goes to "other") the first time someone
// holding that shard's lock finds it (migrate).

// The counted commands, in the order of decisionCommands.
const (
	rlClThrottle = iota
	rlClThrottleMs
	rlClThrottleAll
	rlSlThrottle
	rlSwThrottle
	numDecisionCommands
)

var decisionCommands = [numDecisionCommands]string{"cl.throttle", "cl.throttlems", "cl.throttleall", "sl.throttle", "sw.throttle"}

// The outcomes counted per command and group.
const (
	outAllowed = iota
	outLimited
	outNearLimit
	numOutcomes
)

// otherGroup is the group of the keys no pattern matches.
const otherGroup = "other"

// decisionGroup is one pattern of ratelimit-metrics-groups.
type decisionGroup struct {
	pattern string
	glob    []byte // pattern, for glob.Match
	// prefix is set when the pattern is a literal prefix followed by one
	// '*' (the usual "login:*"): matching is then a prefix comparison.
	prefix string
	isPre  bool
}

func (g *decisionGroup) match(key []byte) bool {
	if g.isPre {
		return len(key) >= len(g.prefix) && string(key[:len(g.prefix)]) == g.prefix
	}
	return glob.Match(g.glob, key, false)
}

// decisionTable holds the counters of one set of groups. Shard i's counts
// are n[i*stride:], indexed by (command*(len(groups)+1)+group)*numOutcomes
// + outcome, group len(groups) being "other". Each is written only under
// shard i's lock.
type decisionTable struct {
	groups []decisionGroup
	stride int
	n      []uint64
	// prev[i] is the table whose shard i counts have not moved here yet
	// (nil once they have); fromPrev maps its group indexes onto ours.
	prev     []*decisionTable
	fromPrev []int
}

func newDecisionTable(patterns string, shards int, prev *decisionTable) *decisionTable {
	t := &decisionTable{}
	for _, p := range strings.Fields(patterns) {
		g := decisionGroup{pattern: p, glob: []byte(p)}
		if pre, ok := strings.CutSuffix(p, "*"); ok && !strings.ContainsAny(pre, `*?[]\`) {
			g.prefix, g.isPre = pre, true
		}
		t.groups = append(t.groups, g)
	}
	per := numDecisionCommands * (len(t.groups) + 1) * numOutcomes
	// A cache line (8 words) at least between shards, so that cores
	// writing different shards do not share one.
	t.stride = (per+7)/8*8 + 8
	t.n = make([]uint64, shards*t.stride)
	if prev != nil {
		t.prev = make([]*decisionTable, shards)
		for i := range t.prev {
			t.prev[i] = prev
		}
		t.fromPrev = make([]int, len(prev.groups)+1)
		for j := range t.fromPrev {
			t.fromPrev[j] = len(t.groups)
			if j < len(prev.groups) {
				if k := t.groupIndex(prev.groups[j].pattern); k >= 0 {
					t.fromPrev[j] = k
				}
			}
		}
	}
	return t
}

func (t *decisionTable) groupIndex(pattern string) int {
	for i := range t.groups {
		if t.groups[i].pattern == pattern {
			return i
		}
	}
	return -1
}

// group returns the index of key's group.
func (t *decisionTable) group(key []byte) int {
	for i := range t.groups {
		if t.groups[i].match(key) {
			return i
		}
	}
	return len(t.groups)
}

// migrate moves shard i's counts of the previous tables into t. It
// requires shard i's lock held.
func (t *decisionTable) migrate(i int) {
	p := t.prev[i]
	if p == nil {
		return
	}
	if p.prev != nil {
		p.migrate(i)
	}
	src, dst := p.shard(i), t.shard(i)
	ng, pg := len(t.groups)+1, len(p.groups)+1
	for c := range numDecisionCommands {
		for g := range pg {
			for o := range numOutcomes {
				dst[(c*ng+t.fromPrev[g])*numOutcomes+o] += src[(c*pg+g)*numOutcomes+o]
			}
		}
	}
	t.prev[i] = nil
}

func (t *decisionTable) shard(i int) []uint64 { return t.n[i*t.stride : (i+1)*t.stride] }

// decisions is the Engine's state of the counters: the current table.
type decisions struct {
	table atomic.Pointer[decisionTable]
	mu    sync.Mutex // serializes the tables' replacements
}

// watchDecisions creates the table and follows ratelimit-metrics-groups.
func (e *Engine) watchDecisions() {
	shards := e.store.NumShards()
	e.decisions.table.Store(newDecisionTable(e.cfg.String(config.RateLimitMetricsGroups), shards, nil))
	e.cfg.OnChange(config.RateLimitMetricsGroups, func(v string) {
		e.decisions.mu.Lock()
		defer e.decisions.mu.Unlock()
		e.decisions.table.Store(newDecisionTable(v, shards, e.decisions.table.Load()))
	})
}

// resetDecisions zeroes the counters (CONFIG RESETSTAT).
func (e *Engine) resetDecisions() {
	e.decisions.mu.Lock()
	defer e.decisions.mu.Unlock()
	e.decisions.table.Store(newDecisionTable(e.cfg.String(config.RateLimitMetricsGroups), e.store.NumShards(), nil))
}

// countDecision counts a decision of command cmd on key, a key of the
// running command (so its shard is locked). remaining and limit are the
// reply's; near limit is remaining ≤ 20 % of limit.
func (c *Client) countDecision(cmd int, key []byte, limited bool, limit, remaining int64) {
	if c.replaying {
		return
	}
	t := c.eng.decisions.table.Load()
	i := c.keyShardIndex(key)
	if t.prev != nil && t.prev[i] != nil {
		t.migrate(i)
	}
	n := t.n[i*t.stride:]
	base := (cmd*(len(t.groups)+1) + t.group(key)) * numOutcomes
	switch {
	case limited:
		n[base+outLimited]++
	case remaining <= limit/5: // 5*remaining <= limit, for integers, without overflow
		n[base+outAllowed]++
		n[base+outNearLimit]++
	default:
		n[base+outAllowed]++
	}
}

// keyShardIndex is keyShard's index.
func (c *Client) keyShardIndex(key []byte) int {
	if len(c.held) == 1 && !c.heldAll {
		return c.held[0]
	}
	return c.eng.store.ShardIndex(key)
}

// Decision is one command's decision counters for one group.
type Decision struct {
	Command, Group              string
	Allowed, Limited, NearLimit uint64
}

// Decisions returns the decision counters of every counted command and
// group (the configured patterns, then "other"). It locks each shard in
// turn: the caller must hold none. A change of the groups while it runs
// may leave a count out of this reading, not of the next one.
func (e *Engine) Decisions() []Decision {
	return e.readDecisions(func(i int, read func(i int)) {
		e.store.Lock(i)
		read(i)
		e.store.Unlock(i)
	})
}

// decisionsLocked is Decisions for a caller holding every shard (INFO).
func (e *Engine) decisionsLocked() []Decision {
	return e.readDecisions(func(i int, read func(i int)) { read(i) })
}

func (e *Engine) readDecisions(each func(i int, read func(i int))) []Decision {
	// out is laid out as the current table; a shard found on a newer table
	// (the groups changed meanwhile) adds up by name.
	cur := e.decisions.table.Load()
	ncur := len(cur.groups) + 1
	out := make([]Decision, numDecisionCommands*ncur)
	for c := range numDecisionCommands {
		for g := range ncur {
			d := &out[c*ncur+g]
			d.Command, d.Group = decisionCommands[c], otherGroup
			if g < len(cur.groups) {
				d.Group = cur.groups[g].pattern
			}
		}
	}
	index := func(t *decisionTable, c, g int) *Decision {
		if t == cur {
			return &out[c*ncur+g]
		}
		name := otherGroup
		if g < len(t.groups) {
			name = t.groups[g].pattern
		}
		for j := range out {
			if out[j].Command == decisionCommands[c] && out[j].Group == name {
				return &out[j]
			}
		}
		out = append(out, Decision{Command: decisionCommands[c], Group: name})
		return &out[len(out)-1]
	}
	for i := range e.store.NumShards() {
		each(i, func(i int) {
			t := e.decisions.table.Load()
			if t.prev != nil && t.prev[i] != nil {
				t.migrate(i)
			}
			n, ng := t.shard(i), len(t.groups)+1
			for c := range numDecisionCommands {
				for g := range ng {
					d := index(t, c, g)
					b := (c*ng + g) * numOutcomes
					d.Allowed += n[b+outAllowed]
					d.Limited += n[b+outLimited]
					d.NearLimit += n[b+outNearLimit]
				}
			}
		})
	}
	return out
}

// infoRatelimit is INFO ratelimit: a line per command and group that
// counted a decision, the group's ':' and '%' percent-escaped in the key.
func infoRatelimit(c *Client, ib *infoBuilder) {
	esc := strings.NewReplacer("%", "%25", ":", "%3A")
	for _, d := range c.eng.decisionsLocked() {
		if d.Allowed == 0 && d.Limited == 0 {
			continue
		}
		ib.b = append(ib.b, "rlstat_"...)
		ib.b = append(ib.b, d.Command...)
		ib.b = append(ib.b, '_')
		ib.b = append(ib.b, esc.Replace(d.Group)...)
		ib.b = append(ib.b, ":allowed="...)
		ib.b = strconv.AppendUint(ib.b, d.Allowed, 10)
		ib.b = append(ib.b, ",limited="...)
		ib.b = strconv.AppendUint(ib.b, d.Limited, 10)
		ib.b = append(ib.b, ",near_limit="...)
		ib.b = strconv.AppendUint(ib.b, d.NearLimit, 10)
		ib.b = append(ib.b, '\r', '\n')
	}
}
