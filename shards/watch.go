package shards

// WATCH support. A shard keeps a version number for every key some client
// watches; any change to the key (write, delete, expiry, flush) bumps it.
// EXEC compares the versions it saw at WATCH time with the current ones.
// Keys nobody watches cost one map-length check per write.

type watchState struct {
	version uint64
	refs    int
}

// Watch registers interest in key and returns its current version. Each
// Watch must be paired with one Unwatch. Requires key's shard held.
func (s *Store) Watch(key []byte) uint64 {
	sh, _ := s.shardOf(key), 0
	if sh.watched == nil {
		sh.watched = make(map[string]*watchState)
	}
	w := sh.watched[string(key)]
	if w == nil {
		w = &watchState{}
		sh.watched[string(key)] = w
	}
	w.refs++
	return w.version
}

// WatchVersion returns the current version of a watched key. Requires key's
// shard held.
func (s *Store) WatchVersion(key []byte) uint64 {
	sh, _ := s.shardOf(key), 0
	if w := sh.watched[string(key)]; w != nil {
		return w.version
	}
	return 0
}

// Unwatch drops one registration made by Watch. Requires key's shard held.
func (s *Store) Unwatch(key []byte) {
	sh, _ := s.shardOf(key), 0
	if w := sh.watched[string(key)]; w != nil {
		w.refs--
		if w.refs <= 0 {
			delete(sh.watched, string(key))
		}
	}
}

// touch records a change to key: it bumps the shard's change counter and
// the key's version if anyone watches it. Requires sh.mu held.
func (sh *Shard) touch(key []byte) {
	sh.changes++
	if len(sh.watched) == 0 {
		return
	}
	if w := sh.watched[string(key)]; w != nil {
		w.version++
	}
}

// Changes returns shard i's change counter: it grows with every write to a
// key of the shard. Comparing it before and after a command tells whether
// the command changed anything there (the journal skips no-op writes).
// Requires shard i held.
func (s *Store) Changes(i int) uint64 { return s.shards[i].changes }

// Fresh returns how many times a command created a key of shard i or found
// one expired and deleted it. A command that moved it began without its
// key, as far as clients could tell. The journal needs to know: a command
// logged as sent (ZADD) replays while nothing expires, so where a deadline
// or the active expiry had ended the key, the replay would find the old
// one and add to it; such a record gets a DEL before it. Requires shard i
// held.
func (s *Store) Fresh(i int) uint64 { return s.shards[i].fresh }
