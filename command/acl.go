package command

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratekv/ratekv/internal/glob"
)

// ACL users, as Redis 7.0's (src/acl.c): a user has flags (on/off, nopass),
// SHA-256 password hashes and selectors; the first selector is the root
// one, the rules given outside parentheses. A selector allows commands (a
// bitmap by command id), key patterns (read, write or both) and Pub/Sub
// channel patterns. A command runs when one selector allows the command
// and all its keys and channels.
//
// A user's rules are an immutable aclRules, swapped whole by ACL SETUSER,
// so that the check reads them without a lock. aclUser.open caches "the
// root selector allows every command, key and channel", which makes the
// check for the default user one flag test.

// aclTableEntry is a row of the generated acl_table.go.
type aclTableEntry struct{ cats, keys string }

// aclBits is the size of a selector's command bitmap; its last bit is set
// by +@all alone, and means "commands to come" (Redis's reserved bit).
const aclBits = 512

type cmdBits [aclBits / 64]uint64

func (b *cmdBits) get(id int) bool { return b[id>>6]&(1<<(id&63)) != 0 }
func (b *cmdBits) set(id int, on bool) {
	if on {
		b[id>>6] |= 1 << (id & 63)
	} else {
		b[id>>6] &^= 1 << (id & 63)
	}
}

// Key pattern permissions.
const (
	aclRead  uint8 = 1
	aclWrite uint8 = 2
	aclRW          = aclRead | aclWrite
)

// Selector flags.
const (
	selAllKeys uint8 = 1 << iota
	selAllChannels
	selAllCommands
)

// Check results, ordered as Redis's ACL_DENIED_* (the log picks the
// highest).
const (
	aclOK = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedAuth
	aclDeniedChannel
)

type keyPattern struct {
	flags   uint8
	pattern []byte
	kind    uint8 // how to match it: patGlob, patPrefix ("rl:*") or patExact (no wildcard)
}

// Pattern kinds: the common "prefix*" and literal patterns are compared
// without the glob matcher.
const (
	patGlob uint8 = iota
	patPrefix
	patExact
)

func newKeyPattern(flags uint8, pat string) keyPattern {
	kind := patExact
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '*':
			if i == len(pat)-1 && kind == patExact {
				kind = patPrefix
				continue
			}
			kind = patGlob
		case '?', '[', '\\':
			kind = patGlob
		}
		if kind == patGlob {
			break
		}
	}
	return keyPattern{flags: flags, pattern: []byte(pat), kind: kind}
}

// match reports whether key matches the pattern.
func (p *keyPattern) match(key []byte) bool {
	switch p.kind {
	case patPrefix:
		n := len(p.pattern) - 1
		return len(key) != 0 && len(key) >= n && string(key[:n]) == string(p.pattern[:n]) // as stringmatchlen, "*" does not match ""
	case patExact:
		return string(key) == string(p.pattern)
	}
	return glob.Match(p.pattern, key, false)
}

type aclSelector struct {
	flags     uint8
	cmds      cmdBits
	firstArgs map[int][]string // +select|0: first arguments allowed for a command whose bit is off
	keys      []keyPattern
	channels  [][]byte
}

func newSelector(pubsubDefault uint8) *aclSelector { return &aclSelector{flags: pubsubDefault} }

func (s *aclSelector) clone() *aclSelector {
	n := *s
	n.keys = append([]keyPattern(nil), s.keys...)
	n.channels = append([][]byte(nil), s.channels...)
	if s.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, a := range s.firstArgs {
			n.firstArgs[id] = append([]string(nil), a...)
		}
	}
	return &n
}

// User flags, in the order ACL LIST and GETUSER show them.
const (
	userOn uint8 = 1 << iota
	userOff
	userNopass
	userSkipSanitize
	userSanitize
)

var userFlagNames = []struct {
	f    uint8
	name string
}{{userOn, "on"}, {userOff, "off"}, {userNopass, "nopass"}, {userSkipSanitize, "skip-sanitize-payload"}, {userSanitize, "sanitize-payload"}}

// aclRules is one version of a user's rules; never changed once published.
type aclRules struct {
	flags     uint8
	passwords []string // lower-case hex SHA-256
	selectors []*aclSelector
	quick     *aclQuick // set when published (aclUser.set); nil: check only
}

func (r *aclRules) clone() *aclRules {
	n := &aclRules{flags: r.flags, passwords: append([]string(nil), r.passwords...)}
	for _, s := range r.selectors {
		n.selectors = append(n.selectors, s.clone())
	}
	return n
}

// open reports whether the rules allow everything: the check can be skipped.
func (r *aclRules) open() bool {
	root := r.selectors[0]
	return root.flags&(selAllKeys|selAllChannels|selAllCommands) == selAllKeys|selAllChannels|selAllCommands
}

// aclUser is a user clients authenticate as. Its rules change in place
// (ACL SETUSER), seen by the connections already authenticated.
type aclUser struct {
	name  string
	open  atomic.Bool // rules.open(), for the dispatcher's fast path
	rules atomic.Pointer[aclRules]
}

// set publishes new rules. open never says true for restricted rules: a
// command that runs meanwhile is checked against the old or the new ones.
func (u *aclUser) set(r *aclRules) {
	r.quick = r.quickForm()
	if !r.open() {
		u.open.Store(false)
		u.rules.Store(r)
		return
	}
	u.rules.Store(r)
	u.open.Store(true)
}

// ACL rule errors, as ACLSetUserStringError words them.
var (
	errRuleUnknown   = errors.New("Unknown command or category name in ACL")
	errRuleSyntax    = errors.New("Syntax error")
	errRuleKeyAll    = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errRuleChanAll   = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errRuleNoPass    = errors.New("The password you are trying to remove from the user does not exist")
	errRuleBadHash   = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errRuleDupUser   = errors.New("Duplicate user found. A user can only be defined once in config files")
	errRuleFirstArgs = errors.New("Allowing first-arg of a subcommand is not supported")
)

// ---- command ids and categories ----

// aclCategoryNames are the categories ACL rules know: Redis's, then
// ratekv's own @ratelimit (CL.*, SL.*, SW.*).
var aclCategoryNames = aclCategories

// aclCommands lists every command and subcommand by ACL id: commands by
// name, each container followed by its subcommands.
var aclCommands []*Command

// aclTop are the top-level commands, in id order.
var aclTop []*Command

var aclSetupOnce sync.Once

// aclSetup numbers the commands and works out their categories, key
// access and channel arguments; NewEngine calls it once the table is full.
func aclSetup() {
	aclSetupOnce.Do(func() {
		for _, cmd := range sortedCommands() {
			aclTop = append(aclTop, cmd)
			aclAddCommand(cmd)
			for _, s := range subcommands[cmd.Name] {
				s.aclParent = cmd
				aclAddCommand(s)
			}
		}
		if len(aclCommands) >= aclBits-1 {
			panic("command: more commands than the ACL bitmap holds")
		}
	})
}

func aclAddCommand(cmd *Command) {
	cmd.aclID = len(aclCommands)
	aclCommands = append(aclCommands, cmd)
	for _, name := range cmd.categories() {
		for i, c := range aclCategoryNames {
			if c == name {
				cmd.aclCats |= 1 << i
			}
		}
	}
	if e, ok := redisACLTable[cmd.Name]; ok {
		for _, k := range strings.Fields(e.keys) {
			var m uint8
			if strings.Contains(k, "R") {
				m |= aclRead
			}
			if strings.Contains(k, "W") {
				m |= aclWrite
			}
			cmd.aclKeys = append(cmd.aclKeys, m)
		}
	} else {
		switch {
		case cmd.Flags&FlagWrite != 0:
			cmd.aclKeys = []uint8{aclRW}
		case cmd.Flags&FlagReadOnly != 0:
			cmd.aclKeys = []uint8{aclRead}
		default:
			cmd.aclKeys = []uint8{0}
		}
	}
	switch cmd.Name {
	case "publish", "spublish":
		cmd.aclChan = chanFirst
	case "subscribe", "ssubscribe":
		cmd.aclChan = chanAll
	case "psubscribe":
		cmd.aclChan = chanPatterns
	}
	if cmd.aclChan == chanNone && cmd.Keys == nil && cmd.subs == nil && subcommands[cmd.Name] == nil {
		switch {
		case cmd.FirstKey <= 0:
			cmd.aclShape = aclShapeNoKeys
		case cmd.FirstKey == 1 && cmd.LastKey == 1:
			cmd.aclShape = aclShapeKey1
		}
	}
}

// The command shapes aclQuick checks: no keys and no channels, or one key
// at args[1] and no channels (CL.THROTTLE, GET, SET, INCR, …).
const (
	aclShapeOther uint8 = iota
	aclShapeNoKeys
	aclShapeKey1
)

// aclQuick is the commonest restricted user's rules in a form the
// dispatcher checks in a few instructions: one selector whose keys are
// all keys or one "prefix*" pattern for reads and writes. It only ever
// answers "allowed"; anything else goes through aclRules.check.
type aclQuick struct {
	allCmds bool
	allKeys bool
	cmds    cmdBits
	prefix  string
}

// quickForm returns the rules' aclQuick, nil when they have another shape.
func (r *aclRules) quickForm() *aclQuick {
	if len(r.selectors) != 1 {
		return nil
	}
	s := r.selectors[0]
	q := &aclQuick{allCmds: s.flags&selAllCommands != 0, allKeys: s.flags&selAllKeys != 0, cmds: s.cmds}
	if !q.allKeys {
		if len(s.keys) != 1 || s.keys[0].kind != patPrefix || s.keys[0].flags&aclRW != aclRW {
			return nil
		}
		p := s.keys[0].pattern
		q.prefix = string(p[:len(p)-1])
	}
	return q
}

// quickOK reports whether the user's rules surely allow cmd with args
// by their quick form; false sends the request to the full check.
func (u *aclUser) quickOK(cmd *Command, args [][]byte) bool {
	q := u.rules.Load().quick
	return q != nil && q.ok(cmd, args)
}

// ok reports whether the rules surely allow cmd with args.
func (q *aclQuick) ok(cmd *Command, args [][]byte) bool {
	if !q.allCmds && !q.cmds.get(cmd.aclID) {
		return false
	}
	switch cmd.aclShape {
	case aclShapeNoKeys:
		return true
	case aclShapeKey1:
		if q.allKeys {
			return true
		}
		k := args[1]
		return len(k) != 0 && len(k) >= len(q.prefix) && string(k[:len(q.prefix)]) == q.prefix // "*" does not match ""
	}
	return false
}

// Which arguments of a command are Pub/Sub channels.
const (
	chanNone     uint8 = iota
	chanFirst          // PUBLISH channel message
	chanAll            // SUBSCRIBE channel ...
	chanPatterns       // PSUBSCRIBE pattern ...: matched literally against the user's
)

func categoryBit(name string) uint64 {
	for i, c := range aclCategoryNames {
		if strings.EqualFold(c, name) {
			return 1 << i
		}
	}
	return 0
}

// keyAccess is how cmd uses its k-th key (in keyIndexes order): Redis's key
// spec of that rank, the last one for the rest.
func (cmd *Command) keyAccess(k int, args [][]byte) uint8 {
	if cmd.Name == "set" { // its spec's flags depend on GET (setGetKeys)
		for _, a := range args[3:] {
			if strings.EqualFold(string(a), "get") {
				return aclRW
			}
		}
		return aclWrite
	}
	if k >= len(cmd.aclKeys) {
		k = len(cmd.aclKeys) - 1
	}
	return cmd.aclKeys[k]
}

// ---- rules ----

// changePerm allows or denies cmd, and all its subcommands when it is a
// container (ACLChangeSelectorPerm).
func (s *aclSelector) changePerm(cmd *Command, allow bool) {
	s.setBit(cmd.aclID, allow)
	delete(s.firstArgs, cmd.aclID)
	for _, sub := range subcommands[cmd.Name] {
		s.setBit(sub.aclID, allow)
	}
}

func (s *aclSelector) setBit(id int, on bool) {
	s.cmds.set(id, on)
	if !on {
		s.flags &^= selAllCommands
	}
}

func (s *aclSelector) setCategory(bit uint64, allow bool) {
	for _, cmd := range aclTop {
		if cmd.aclCats&bit != 0 {
			s.changePerm(cmd, allow)
		}
		for _, sub := range subcommands[cmd.Name] {
			if sub.aclCats&bit != 0 {
				s.changePerm(sub, allow)
			}
		}
	}
}

// apply applies one selector rule (ACLSetSelector).
func (s *aclSelector) apply(op string) error {
	switch {
	case strings.EqualFold(op, "allkeys") || op == "~*":
		s.flags |= selAllKeys
		s.keys = nil
	case strings.EqualFold(op, "resetkeys"):
		s.flags &^= selAllKeys
		s.keys = nil
	case strings.EqualFold(op, "allchannels") || op == "&*":
		s.flags |= selAllChannels
		s.channels = nil
	case strings.EqualFold(op, "resetchannels"):
		s.flags &^= selAllChannels
		s.channels = nil
	case strings.EqualFold(op, "allcommands") || strings.EqualFold(op, "+@all"):
		for i := range s.cmds {
			s.cmds[i] = ^uint64(0)
		}
		s.flags |= selAllCommands
		s.firstArgs = nil
	case strings.EqualFold(op, "nocommands") || strings.EqualFold(op, "-@all"):
		s.cmds = cmdBits{}
		s.flags &^= selAllCommands
		s.firstArgs = nil
	case op[0] == '~' || op[0] == '%':
		if s.flags&selAllKeys != 0 {
			return errRuleKeyAll
		}
		var flags uint8
		off := 1
		if op[0] == '%' {
			for ; off < len(op); off++ {
				switch ch := op[off]; {
				case (ch == 'R' || ch == 'r') && flags&aclRead == 0:
					flags |= aclRead
				case (ch == 'W' || ch == 'w') && flags&aclWrite == 0:
					flags |= aclWrite
				case ch == '~':
					off++
					goto parsed
				default:
					return errRuleSyntax
				}
			}
		parsed:
			if flags == 0 {
				return errRuleSyntax
			}
		} else {
			flags = aclRW
		}
		pat := op[off:]
		if hasSpaces(pat) {
			return errRuleSyntax
		}
		for i := range s.keys {
			if string(s.keys[i].pattern) == pat {
				s.keys[i].flags |= flags
				s.flags &^= selAllKeys
				return nil
			}
		}
		s.keys = append(s.keys, newKeyPattern(flags, pat))
		s.flags &^= selAllKeys
	case op[0] == '&':
		if s.flags&selAllChannels != 0 {
			return errRuleChanAll
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return errRuleSyntax
		}
		for _, c := range s.channels {
			if string(c) == pat {
				return nil
			}
		}
		s.channels = append(s.channels, []byte(pat))
		s.flags &^= selAllChannels
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		name := op[1:]
		bar := strings.LastIndexByte(name, '|')
		if bar < 0 {
			cmd := lookupCommandPath([]byte(name))
			if cmd == nil {
				return errRuleUnknown
			}
			s.changePerm(cmd, true)
			return nil
		}
		cmd := lookupCommandPath([]byte(name[:bar]))
		if cmd == nil {
			return errRuleUnknown
		}
		if cmd.aclParent != nil {
			return errRuleFirstArgs
		}
		first := name[bar+1:]
		if first == "" {
			return errRuleSyntax
		}
		if cmd.subs != nil {
			sub := lookupCommandPath([]byte(name))
			if sub == nil {
				return errRuleUnknown
			}
			s.changePerm(sub, true)
			return nil
		}
		if s.firstArgs == nil {
			s.firstArgs = map[int][]string{}
		}
		for _, a := range s.firstArgs[cmd.aclID] {
			if strings.EqualFold(a, first) {
				return nil
			}
		}
		s.firstArgs[cmd.aclID] = append(s.firstArgs[cmd.aclID], first)
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		cmd := lookupCommandPath([]byte(op[1:]))
		if cmd == nil {
			return errRuleUnknown
		}
		s.changePerm(cmd, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		bit := categoryBit(op[2:])
		if bit == 0 {
			return errRuleUnknown
		}
		s.setCategory(bit, op[0] == '+')
	default:
		return errRuleSyntax
	}
	return nil
}

// hasSpaces reports whether s has a space or a NUL (ACLStringHasSpaces).
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

func hashPassword(pw []byte) string {
	sum := sha256.Sum256(pw)
	return hex.EncodeToString(sum[:])
}

// ruleHash is the password hash of a >pass, <pass, #hash or !hash rule.
func ruleHash(op string) (string, error) {
	if op[0] == '>' || op[0] == '<' {
		return hashPassword([]byte(op[1:])), nil
	}
	if !validHash(op[1:]) {
		return "", errRuleBadHash
	}
	return op[1:], nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// apply applies one user rule (ACLSetUser) to r. pubsubDefault is the
// channel flag new selectors start with (acl-pubsub-default).
func (r *aclRules) apply(op string, pubsubDefault uint8) error {
	if op == "" {
		return nil
	}
	switch {
	case strings.EqualFold(op, "on"):
		r.flags = r.flags&^userOff | userOn
	case strings.EqualFold(op, "off"):
		r.flags = r.flags&^userOn | userOff
	case strings.EqualFold(op, "skip-sanitize-payload"):
		r.flags = r.flags&^userSanitize | userSkipSanitize
	case strings.EqualFold(op, "sanitize-payload"):
		r.flags = r.flags&^userSkipSanitize | userSanitize
	case strings.EqualFold(op, "nopass"):
		r.flags |= userNopass
		r.passwords = nil
	case strings.EqualFold(op, "resetpass"):
		r.flags &^= userNopass
		r.passwords = nil
	case op[0] == '>' || op[0] == '#':
		h, err := ruleHash(op)
		if err != nil {
			return err
		}
		found := false
		for _, p := range r.passwords {
			found = found || p == h
		}
		if !found {
			r.passwords = append(r.passwords, h)
		}
		r.flags &^= userNopass
	case op[0] == '<' || op[0] == '!':
		h, err := ruleHash(op)
		if err != nil {
			return err
		}
		for i, p := range r.passwords {
			if p == h {
				r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
				return nil
			}
		}
		return errRuleNoPass
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector(pubsubDefault)
		for _, a := range strings.Fields(op[1 : len(op)-1]) {
			if err := s.apply(a); err != nil {
				return err
			}
		}
		r.selectors = append(r.selectors, s)
	case strings.EqualFold(op, "clearselectors"):
		r.selectors = r.selectors[:1]
	case strings.EqualFold(op, "reset"):
		r.flags &^= userNopass
		r.passwords = nil
		root := r.selectors[0]
		root.flags &^= selAllKeys | selAllChannels
		root.keys, root.channels = nil, nil
		root.flags |= pubsubDefault
		r.flags = r.flags&^(userOn|userSkipSanitize) | userOff | userSanitize
		r.selectors = r.selectors[:1]
		_ = root.apply("-@all")
	default:
		return r.selectors[0].apply(op)
	}
	return nil
}

// newRules returns a new user's rules: off, no password, nothing allowed.
func newRules(pubsubDefault uint8) *aclRules {
	return &aclRules{flags: userOff, selectors: []*aclSelector{newSelector(pubsubDefault)}}
}

// mergeSelectors joins a selector spread over several arguments ("(~a"
// "+get)") into one (ACLMergeSelectorArguments). bad is the index of an
// unclosed one, or -1.
func mergeSelectors(ops []string) (out []string, bad int) {
	open := -1
	var cur string
	for i, op := range ops {
		if open < 0 && op != "" && op[0] == '(' && op[len(op)-1] != ')' {
			open, cur = i, op
			continue
		}
		if open >= 0 {
			cur += " " + op
			if op != "" && op[len(op)-1] == ')' {
				open = -1
				out = append(out, cur)
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, open
	}
	return out, -1
}

// ---- checks ----

// check reports whether rules allow cmd (a subcommand when args name one)
// with args; when not, why (aclDenied*) and the index of the key or
// channel at fault, as ACLCheckAllUserCommandPerm.
func (r *aclRules) check(cmd *Command, args [][]byte, keyBuf []int) (res, idx int, buf []int) {
	res = aclDeniedCmd
	keysDone := false
	buf = keyBuf[:0]
	for _, s := range r.selectors {
		sres, sidx := aclOK, 0
		if s.flags&selAllCommands == 0 && cmd.Flags&FlagNoAuth == 0 && !s.cmds.get(cmd.aclID) && !s.firstArgOK(cmd, args) {
			sres = aclDeniedCmd
		}
		if sres == aclOK && s.flags&selAllKeys == 0 && cmd.Keys == nil && cmd.subs == nil {
			// Keys at fixed positions (CL.THROTTLE, GET, …): checked in
			// place, without building the index list.
			if i := s.fixedKeyDenied(cmd, args); i > 0 {
				sres, sidx = aclDeniedKey, i
			}
		} else if sres == aclOK && s.flags&selAllKeys == 0 && (cmd.FirstKey > 0 || cmd.Keys != nil) {
			if !keysDone {
				buf = cmd.keyIndexes(args, buf)
				keysDone = true
			}
			for k, i := range buf {
				if !s.keyOK(args[i], cmd.keyAccess(k, args)) {
					sres, sidx = aclDeniedKey, i
					break
				}
			}
		}
		if sres == aclOK && s.flags&selAllChannels == 0 && cmd.aclChan != chanNone {
			last := len(args) - 1
			if cmd.aclChan == chanFirst {
				last = 1
			}
			for i := 1; i <= last && i < len(args); i++ {
				if !channelIn(s.channels, args[i], cmd.aclChan == chanPatterns) {
					sres, sidx = aclDeniedChannel, i
					break
				}
			}
		}
		if sres == aclOK {
			return aclOK, 0, buf
		}
		if sres > res || (sres == res && sidx > idx) {
			res, idx = sres, sidx
		}
	}
	return res, idx, buf
}

func (s *aclSelector) firstArgOK(cmd *Command, args [][]byte) bool {
	allowed := s.firstArgs[cmd.aclID]
	if len(allowed) == 0 || len(args) < 2 {
		return false
	}
	i := 1
	if cmd.aclParent != nil {
		i = 2
	}
	if i >= len(args) {
		return false
	}
	for _, a := range allowed {
		if strings.EqualFold(a, string(args[i])) {
			return true
		}
	}
	return false
}

// keyOK reports whether the selector allows key used with access need.
// fixedKeyDenied returns the index in args of the first key at cmd's fixed
// key positions that the selector refuses, 0 when it refuses none.
func (s *aclSelector) fixedKeyDenied(cmd *Command, args [][]byte) int {
	first, last := cmd.keyRange(len(args))
	for k, i := 0, first; i <= last; k, i = k+1, i+cmd.Step {
		if !s.keyOK(args[i], cmd.keyAccess(k, args)) {
			return i
		}
	}
	return 0
}

func (s *aclSelector) keyOK(key []byte, need uint8) bool {
	if s.flags&selAllKeys != 0 {
		return true
	}
	for i := range s.keys {
		if p := &s.keys[i]; p.flags&need == need && p.match(key) {
			return true
		}
	}
	return false
}

func channelIn(list [][]byte, ch []byte, literal bool) bool {
	for _, p := range list {
		if literal && string(p) == string(ch) || !literal && glob.Match(p, ch, false) {
			return true
		}
	}
	return false
}

// channelOK reports whether rules allow the channel (literal: a pattern
// of PSUBSCRIBE, compared as it is), as ACLUserCheckChannelPerm.
func (r *aclRules) channelOK(ch []byte, literal bool) bool {
	for _, s := range r.selectors {
		if s.flags&selAllChannels != 0 || channelIn(s.channels, ch, literal) {
			return true
		}
	}
	return false
}

// keyOK reports whether some selector allows key with access need.
func (r *aclRules) keyOK(key []byte, need uint8) bool {
	for _, s := range r.selectors {
		if s.keyOK(key, need) {
			return true
		}
	}
	return false
}

// passwordOK reports whether pass opens a user with these rules
// (ACLCheckUserCredentials), comparing hashes in constant time.
func (r *aclRules) passwordOK(pass []byte) bool {
	if r.flags&userOff != 0 {
		return false
	}
	if r.flags&userNopass != 0 {
		return true
	}
	h := hashPassword(pass)
	ok := 0
	for _, p := range r.passwords {
		ok |= subtle.ConstantTimeCompare([]byte(p), []byte(h))
	}
	return ok == 1
}

// ---- describing ----

// describeCommands returns the command rules of s as ACL LIST shows them
// (ACLDescribeSelectorCommandRules): +@all or -@all, then the categories
// that best fit the bitmap, then single commands.
func (s *aclSelector) describeCommands() string {
	var b strings.Builder
	additive := !s.cmds.get(aclBits - 1)
	fake := &aclSelector{}
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		_ = fake.apply("+@all")
	}
	temp := &aclSelector{cmds: s.cmds}
	applied := make([]bool, len(aclCategoryNames))
	for {
		best := -1
		mindiff, maxsame := int(^uint(0)>>1), 0
		for j := range aclCategoryNames {
			if applied[j] {
				continue
			}
			on, off := temp.countCategory(uint64(1) << j)
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < mindiff || diff == mindiff && same > maxsame) {
				best, mindiff, maxsame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		bit := uint64(1) << best
		fake.setCategory(bit, additive)
		temp.setCategory(bit, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(aclCategoryNames[best])
		b.WriteByte(' ')
		applied[best] = true
	}
	for _, cmd := range aclCommands {
		user, f := s.cmds.get(cmd.aclID), fake.cmds.get(cmd.aclID)
		if user != f {
			if user {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(cmd.Name)
			b.WriteByte(' ')
			fake.changePerm(cmd, user)
		}
		if !user {
			for _, a := range s.firstArgs[cmd.aclID] {
				b.WriteString("+" + cmd.Name + "|" + a + " ")
			}
		}
	}
	out := b.String()
	return out[:len(out)-1]
}

func (s *aclSelector) countCategory(bit uint64) (on, off int) {
	for _, cmd := range aclCommands {
		if cmd.aclCats&bit != 0 {
			if s.cmds.get(cmd.aclID) {
				on++
			} else {
				off++
			}
		}
	}
	return on, off
}

func (p keyPattern) String() string {
	switch p.flags {
	case aclRead:
		return "%R~" + string(p.pattern)
	case aclWrite:
		return "%W~" + string(p.pattern)
	}
	return "~" + string(p.pattern)
}

// keysText and channelsText are ACL GETUSER's keys and channels fields.
func (s *aclSelector) keysText() string {
	if s.flags&selAllKeys != 0 {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, p := range s.keys {
		parts[i] = p.String()
	}
	return strings.Join(parts, " ")
}

func (s *aclSelector) channelsText() string {
	if s.flags&selAllChannels != 0 {
		return "&*"
	}
	parts := make([]string, len(s.channels))
	for i, c := range s.channels {
		parts[i] = "&" + string(c)
	}
	return strings.Join(parts, " ")
}

// describe is a selector as ACL LIST shows it (ACLDescribeSelector).
func (s *aclSelector) describe() string {
	var b strings.Builder
	if s.flags&selAllKeys != 0 {
		b.WriteString("~* ")
	} else {
		for _, p := range s.keys {
			b.WriteString(p.String() + " ")
		}
	}
	if s.flags&selAllChannels != 0 {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteString("&" + string(c) + " ")
		}
	}
	b.WriteString(s.describeCommands())
	return b.String()
}

// describe is the user's rules as ACL LIST and ACL SAVE write them
// (ACLDescribeUser).
func (r *aclRules) describe() string {
	var b strings.Builder
	for _, f := range userFlagNames {
		if r.flags&f.f != 0 {
			b.WriteString(f.name + " ")
		}
	}
	for _, p := range r.passwords {
		b.WriteString("#" + p + " ")
	}
	for i, s := range r.selectors {
		if i == 0 {
			b.WriteString(s.describe())
		} else {
			b.WriteString(" (" + s.describe() + ")")
		}
	}
	return b.String()
}

// ---- the user registry ----

// aclState is the engine's users and ACL log.
type aclState struct {
	mu    sync.Mutex // guards users and the log
	users map[string]*aclUser
	def   *aclUser // the default user; never deleted, rules replaced in place

	log     []*aclLogEntry // newest first
	denied  [aclDeniedChannel + 1]atomic.Int64
	authLog authLogLimiter
}

func (a *aclState) init(pubsubDefault uint8) {
	a.users = map[string]*aclUser{}
	a.def = &aclUser{name: "default"}
	a.def.set(defaultRules(pubsubDefault))
	a.users["default"] = a.def
}

// defaultRules are the default user's rules at start: everything, no
// password (ACLCreateDefaultUser).
func defaultRules(pubsubDefault uint8) *aclRules {
	r := newRules(pubsubDefault)
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = r.apply(op, pubsubDefault)
	}
	return r
}

func (a *aclState) user(name string) *aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// sortedUsers returns the users ordered by name, as Redis's radix tree.
func (a *aclState) sortedUsers() []*aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*aclUser, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
