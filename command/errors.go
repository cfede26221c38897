package command

import "errors"

// Every error text a command can reply lives here, byte-equal to what
// Redis 7 (or redis-cell, for CL.THROTTLE) sends, without the leading '-';
// the wire protocol's own errors are package resp's (resp/errors.go).
// Keeping them in one place is what makes "byte-equal to Redis" checkable.
const (
	errSyntax         = "ERR syntax error"
	errNotInt         = "ERR value is not an integer or out of range"
	errNotFloat       = "ERR value is not a valid float"
	errWrongType      = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth         = "NOAUTH Authentication required."
	errWrongPass      = "WRONGPASS invalid username-password pair or user is disabled."
	errAuthNotSet     = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errDBIndex        = "ERR DB index is out of range"
	errSelectNotInt   = "ERR value is not an integer or out of range"
	errOverflow       = "ERR increment or decrement would overflow"
	errIncrFloatNaN   = "ERR increment would produce NaN or Infinity"
	errNoSuchKey      = "ERR no such key"
	errInvalidExpire  = "ERR invalid expire time in '%s' command"
	errNestedMulti    = "ERR MULTI calls can not be nested"
	errExecNoMulti    = "ERR EXEC without MULTI"
	errDiscardNoMulti = "ERR DISCARD without MULTI"
	errWatchInMulti   = "ERR WATCH inside MULTI is not allowed"
	errExecAbort      = "EXECABORT Transaction discarded because of previous errors."
	// errExecAbortBecause precedes the error that refused a whole
	// transaction at EXEC (Redis's execCommandAbort).
	errExecAbortBecause = "EXECABORT Transaction discarded because of: "
	errUnknownCommand   = "ERR unknown command '%s', with args beginning with: %s"
	errUnknownSubcmd    = "ERR unknown subcommand '%s'. Try %s HELP."
	errWrongArgs        = "ERR wrong number of arguments for '%s' command"
	errSubcommandSyntax = "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
	errNoConfigFile     = "ERR The server is running without a config file"
	errConfigRewrite    = "ERR Rewriting config file: %s"
	errSubscribedMode   = "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
	errNoProto          = "NOPROTO unsupported protocol version"
	errStringTooLong    = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	errGTLTNX           = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errNXXX             = "ERR NX and XX options at the same time are not compatible"
	errCursor           = "ERR invalid cursor"
	errTimeout          = "ERR timeout is not an integer or out of range"
	errSameObject       = "ERR source and destination objects are the same"
	errExpireNXCompat   = "ERR NX and XX, GT or LT options at the same time are not compatible"
	errExpireGTLT       = "ERR GT and LT options at the same time are not compatible"
	errUnsupportedOpt   = "ERR Unsupported option %s"
	errOffsetRange      = "ERR offset is out of range"
	errDecrOverflow     = "ERR decrement would overflow"
	errClientName       = "ERR Client names cannot contain spaces, newlines or special characters."
	errNoSuchClient     = "ERR No such client"
	errConfigUnknown    = "ERR Unknown option or number of arguments for CONFIG SET - '%s'"
	errConfigSet        = "ERR CONFIG SET failed (possibly related to argument '%s') - %s"
	errConfigImmutable  = "ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config"
	errPanic            = "ERR internal error while executing '%s' (the connection will be closed)"
	errReadOnlyDisk     = "MISCONF Errors writing to the AOF file: %s"
	errOOM              = "OOM command not allowed when used memory > 'maxmemory'."
	errObjectNoLFU      = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	errObjectLFU        = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	errObjectNoLRU      = "ERR An LRU maxmemory policy is not selected, idle time not tracked (ratekv keeps it under allkeys-lru and volatile-lru only)."
	errBgsaveDisk       = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

	// SLOWLOG, LATENCY (slowlog.go, latency.go).
	errSlowlogCount     = "ERR count should be greater than or equal to -1"
	errSubcmdSyntax     = "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
	errLatencyNoSamples = "ERR No samples available for event '%s'"

	// Replication (repl.go).
	errReadOnlyReplica      = "READONLY You can't write against a read only replica."
	errNoReplicas           = "NOREPLICAS Not enough good replicas to write."
	errMasterDown           = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	errLoading              = "LOADING Redis is loading the dataset in memory"
	errNoMasterLink         = "NOMASTERLINK Can't SYNC while not connected with my master"
	errSyncPendingOutput    = "ERR SYNC and PSYNC are invalid with pending output"
	errReplicaofFromReplica = "ERR Command is not valid when client is a replica."
	errInvalidMasterPort    = "ERR Invalid master port"
	errReplconfUnknown      = "ERR Unrecognized REPLCONF option: %s"
	errReplconfIP           = "ERR REPLCONF ip-address provided by replica instance is too long: %s"
	errReplicaNotRatekv     = "ERR ratekv replicates only to ratekv replicas: this replica did not send REPLCONF capa ratekv (a Redis replica expects an RDB stream, which ratekv does not produce)"
	errWaitReplica          = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
	errTimeoutNegative      = "ERR timeout is negative"

	// Server commands (server.go).
	errConfigDuplicate   = "duplicate parameter"                                    // the reason in errConfigSet
	errAOFStart          = "Unable to turn on AOF. Check server logs."              // the reason in errConfigSet, Redis's (config.c updateAppendonly)
	errTLSConfig         = "Unable to update TLS configuration. Check server logs." // the reason in errConfigSet, Redis's (config.c applyTlsCfg)
	errGetkeysInvalidCmd = "ERR Invalid command specified"
	errGetkeysNoKeys     = "ERR The command has no key arguments"
	errGetkeysArity      = "ERR Invalid number of arguments specified for command"
	errGetkeysInvalid    = "ERR Invalid arguments specified for command"
	errNoShutdown        = "ERR No shutdown in progress."
	errNotInMulti        = "ERR Command not allowed inside a transaction"
	errShutdownFailed    = "ERR Errors trying to SHUTDOWN. Check logs."
	errClusterDisabled   = "ERR This instance has cluster support disabled"
	// Cluster mode (cluster.go; src/cluster.c, src/db.c, src/script.c).
	errCrossSlot          = "CROSSSLOT Keys in request don't hash to the same slot"
	errSelectCluster      = "ERR SELECT is not allowed in cluster mode"
	errInvalidSlot        = "ERR Invalid slot"
	errInvalidSlotOrCount = "ERR Invalid slot or number of keys"
	errScriptNoCluster    = "ERR Can not run script on cluster, 'no-cluster' flag is set."
	errScriptNonLocalKey  = "Script attempted to access a non local key in a cluster node"
	errScriptCrossSlot    = "Script attempted to access keys that do not hash to the same slot"
	errReplicaofCluster   = "ERR REPLICAOF not allowed in cluster mode."
	errClusterNoControl   = "ERR this node has no cluster topology to change (cluster-enabled without its control plane)"
	errClusterResetKeys   = "ERR CLUSTER RESET can't be called with master nodes containing keys"
	// A cluster of several nodes: routing, slot migrations and MIGRATE
	// (cluster_route.go, migrate.go; src/cluster.c).
	errMoved            = "MOVED %d %s:%d"
	errAsk              = "ASK %d %s:%d"
	errTryAgain         = "TRYAGAIN Multiple keys request during rehashing of slot"
	errSlotUnbound      = "CLUSTERDOWN Hash slot not served"
	errClusterDown      = "CLUSTERDOWN The cluster is down"
	errClusterDownRO    = "CLUSTERDOWN The cluster is down and only accepts read commands"
	errSlotRange        = "ERR Invalid or out of range slot"
	errSetslotReplica   = "ERR Please use SETSLOT only with masters."
	errNotSlotOwner     = "ERR I'm not the owner of hash slot %d"
	errAlreadySlotOwner = "ERR I'm already the owner of hash slot %d"
	errNodeUnknownTo    = "ERR I don't know about node %s"
	errNodeUnknown      = "ERR Unknown node %s"
	errTargetNotPrimary = "ERR Target node is not a master"
	errSlotHasKeys      = "ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot."
	errSetslotSyntax    = "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"
	errControlPlane     = "ERR %s"
	errMigrateKeysArg   = "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
	errMigrateConnect   = "IOERR error or timeout connecting to the client"
	errMigrateIO        = "IOERR error or timeout %s to target instance"
	errMigrateTarget    = "ERR Target instance replied with error: %s"

	// Persistence (persist.go). errSaveFailed is Redis's bare shared.err.
	errBusyKey           = "BUSYKEY Target key name already exists."
	errRestoreTTL        = "ERR Invalid TTL value, must be >= 0"
	errRestoreIdle       = "ERR Invalid IDLETIME value, must be >= 0"
	errRestoreFreq       = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	errDumpPayload       = "ERR DUMP payload version or checksum are wrong"
	errBadDataFormat     = "ERR Bad data format"
	errBgsaveInProgress  = "ERR Background save already in progress"
	errBgsaveDuringAOF   = "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."
	errRewriteInProgress = "ERR Background append only file rewriting already in progress"
	errRewriteFailed     = "ERR Can't execute an AOF background rewriting. Please check the server logs for more information."
	errSaveFailed        = "ERR"
	errNoPersistence     = "ERR persistence is not configured on this server"
	// ratekv's: Redis schedules the switch instead (see Client.setAppendOnly).
	errAppendonlyInMulti = "ERR CONFIG SET appendonly cannot switch the append-only file inside a transaction"
	// Log-only records (record.go): only a damaged log shows them.
	errSetIntPayload   = "ERR SETINT payload must be %d bytes, got %d"
	errSetIntDeadline  = "ERR SETINT deadline %d is negative"
	errReplStateRecord = "ERR bad REPLSTATE record: replication id %q, offset %q"

	// Connection commands.
	errHelloProto          = "ERR Protocol version is not an integer or out of range"
	errHelloOption         = "ERR Syntax error in HELLO option '%s'"
	errHelloNoAuth         = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errClientOption        = "ERR Unrecognized option '%s'"
	errClientAttr          = "ERR %s cannot contain spaces, newlines or special characters."
	errClientType          = "ERR Unknown client type '%s'"
	errNoSuchUser          = "ERR No such user '%s'"
	errRandTooBig          = "ERR %s reply too large (over %d MB): ask for fewer %s"
	errMgetTooBig          = "ERR MGET reply too large (over %d MB): ask for fewer keys"
	errExecTooBig          = "ERR EXEC reply too large (over %d MB): the transaction ran, its replies are dropped"
	errClientID            = "ERR Invalid client ID"
	errClientIDKill        = "ERR client-id should be greater than 0"
	errPauseMode           = "ERR CLIENT PAUSE mode must be WRITE or ALL"
	errMonitorDenyBlocking = "ERR MONITOR isn't allowed for DENY BLOCKING client"
	errTimeoutNeg          = "ERR timeout is negative"
	errMaxage              = "ERR maxage is not an integer or out of range"

	// CL.THROTTLE family: redis-cell's texts (module errors carry no ERR
	// prefix), plus ratekv's own for inputs redis-cell would wrap on.
	errCellUsage     = "Cell error: Store error: Usage: %s <key> <max_burst> <count per period> <period> [<quantity>]"
	errCellParseInt  = "Cell error: Store error: Couldn't parse as integer: %s"
	errCellZeroRate  = "Cell error: Store error: Zero rates are not supported"
	errCellBadTAT    = "Cell error: invalid digit found in string"
	errCellNegative  = "ERR max_burst, count and period must not be negative"
	errCellAllUsage  = "ERR syntax error, usage: CL.THROTTLEALL numlimits key max_burst count period [key max_burst count period ...] [QUANTITY quantity]"
	errCellNumLimits = "ERR numlimits must be a positive integer"

	// Sorted sets (src/t_zset.c, and object.c's range checks).
	errZaddNXXX     = "ERR XX and NX options at the same time are not compatible"
	errZaddIncrPair = "ERR INCR option supports a single increment-element pair"
	errZsetNaN      = "ERR resulting score is not a number (NaN)"
	errMinMaxFloat  = "ERR min or max is not a float"
	errMinMaxLex    = "ERR min or max not valid string range item"
	errZrangeLimit  = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZrangeLexWS  = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	errMustPositive = "ERR value is out of range, must be positive"
	errLongBetween  = "ERR value is out of range, value must between %d and %d"
	errValueRange   = "ERR value is out of range"
	errWindowArg    = "ERR %s must be an integer between %d and %d" // SL.THROTTLE, SW.THROTTLE

	// Scripting (script.go, lua.go): Redis 7.0's texts.
	errNoScript           = "NOSCRIPT No matching script. Please use EVAL."
	errEvalTooManyKeys    = "ERR Number of keys can't be greater than number of args"
	errEvalNegativeKeys   = "ERR Number of keys can't be negative"
	errShebangInvalid     = "ERR Invalid script shebang"
	errScriptROWithWrites = "ERR Can not execute a script with write flag using *_ro command."
	errScriptBgsaveDisk   = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts."
	errScriptAOFDisk      = "MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. AOF error: "
	errScriptFlushOption  = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
	errNotBusy            = "NOTBUSY No scripts in execution right now."
	errUnkillable         = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errBusyScript         = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errScriptKilled       = "ERR Script killed by user with SCRIPT KILL..."
	errScriptCompile      = "ERR Error compiling script (new function): "
	errScriptRunning      = "ERR Error running script %s, %.100s"
	errShebangEngine      = "ERR Unexpected engine in script shebang: "
	errShebangOption      = "ERR Unknown lua shebang option: "
	errShebangFlag        = "ERR Unexpected flag in script shebang: "
	// Raised inside a script (script_lua.c): the error handler or
	// luaErrorTable adds the code and the location.
	errLuaReadonly      = "Attempt to modify a readonly table"
	errLuaNoGlobal      = "Script attempted to access nonexistent global variable '%s'"
	errLuaStackLimit    = "ERR reached lua stack limit"
	errLuaWrongArgs     = "wrong number of arguments"
	errLuaWrongArgsType = "wrong number or type of arguments"
	errLuaLogArgs       = "redis.log() requires two arguments or more."
	errLuaLogLevelType  = "First argument must be a number (log level)."
	errLuaLogLevel      = "Invalid debug level."
	errLuaSetrespArgs   = "redis.setresp() requires one argument."
	errLuaSetrespProto  = "RESP version must be 2 or 3."
	errLuaSetReplArgs   = "redis.set_repl() requires two arguments."
	errLuaSetReplFlags  = "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."
	errLuaCallOutside   = "redis.call/pcall can only be called inside a script invocation"
	errLuaCallNoArgs    = "Please specify at least one argument for this redis lib call"
	errLuaCallArgType   = "Lua redis lib command arguments must be strings or integers"
	// The reasons redis.call refuses a command: luaErrorTable gives them
	// the ERR code.
	errScriptUnknownCmd = "Unknown Redis command called from script"
	errScriptWrongArgs  = "Wrong number of args calling Redis command from script"
	errScriptNotAllowed = "This Redis command is not allowed from script"
	errScriptWriteRO    = "Write commands are not allowed from read-only scripts."
	// Hashes (src/t_hash.c).
	errHashNotInt   = "ERR hash value is not an integer"
	errHashNotFloat = "ERR hash value is not a float"
	errNaNOrInf     = "ERR value is NaN or Infinity"

	// Lists (src/t_list.c).
	errIndexRange = "ERR index out of range"
	errLposRank   = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	errLposCount  = "ERR COUNT can't be negative"
	errLposMaxlen = "ERR MAXLEN can't be negative"

	// Protocol errors: the client is told, then disconnected.
	errMultiQueueLimit = "ERR the MULTI queue exceeds client-query-buffer-limit (%d bytes); closing connection"

	// ACL (acl.c, server.c's processCommand, multi.c's execCommand,
	// script.c's scriptVerifyACL).
	errNoPermCmd           = "NOPERM this user has no permissions to run the '%s' command"
	errNoPermKey           = "NOPERM this user has no permissions to access one of the keys used as arguments"
	errNoPermChannel       = "NOPERM this user has no permissions to access one of the channels used as arguments"
	errNoPermExec          = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: "
	errScriptNoPermCmd     = "The user executing the script can't run this command or subcommand"
	errScriptNoPermKey     = "The user executing the script can't access at least one of the keys mentioned in the command arguments"
	errScriptNoPermChannel = "The user executing the script can't publish to the channel mentioned in the command"
	errACLUserSpaces       = "ERR Usernames can't contain spaces or null characters"
	errACLUnmatched        = "ERR Unmatched parenthesis in acl selector starting at '%s'."
	errACLSetuser          = "ERR Error in ACL SETUSER modifier '%s': %s"
	errACLDelDefault       = "ERR The 'default' user cannot be removed"
	errACLNoFile           = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
	errACLSave             = "ERR There was an error trying to save the ACLs. Please check the server logs for more information"
	errACLUnknownCat       = "ERR Unknown category '%s'"
	errACLGenpass          = "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
	errACLNoUser           = "ERR User '%s' not found"
	errACLNoCommand        = "ERR Command '%s' not found"
	errACLSubSyntax        = "ERR unknown subcommand or wrong number of arguments for '%s'. Try ACL HELP."
)

// ErrTLSConfig is what a TLS apply function (config.OnApply) returns when
// the new files or settings do not load: CONFIG SET then fails with
// Redis's reason, and the server's log says why.
var ErrTLSConfig = errors.New(errTLSConfig)

// Redis Cluster's topology errors (src/cluster.c), shared with the cluster
// package, which gives them when an entry cannot apply: the format takes
// the slot, node id or value the message names.
const (
	ErrSlotOutOfRange     = "ERR Invalid or out of range slot"
	ErrSlotBusy           = "ERR Slot %d is already busy"
	ErrSlotUnassigned     = "ERR Slot %d is already unassigned"
	ErrSlotTwice          = "ERR Slot %d specified multiple times"
	ErrSlotRangeOrder     = "ERR start slot number %d is greater than end slot number %d"
	ErrUnknownNode        = "ERR Unknown node %s"
	ErrForgetMyself       = "ERR I tried hard but I can't forget myself..."
	ErrForgetMaster       = "ERR Can't forget my master!"
	ErrReplicateMyself    = "ERR Can't replicate myself"
	ErrReplicateReplica   = "ERR I can only replicate a master, not a replica."
	ErrReplicateNotEmpty  = "ERR To set a master the node must be empty and without assigned slots."
	ErrNotMaster          = "ERR The specified node is not a master"
	ErrConfigEpochInvalid = "ERR Invalid config epoch specified: %s"
	ErrConfigEpochKnown   = "ERR The user can assign a config epoch only when the node does not know any other node."
	ErrConfigEpochNonZero = "ERR Node config epoch is already non-zero"
	ErrInvalidBasePort    = "ERR Invalid base port specified: %s"
	ErrInvalidBusPort     = "ERR Invalid bus port specified: %s"
	ErrInvalidNodeAddr    = "ERR Invalid node address specified: %s:%s"
	ErrFailoverMaster     = "ERR You should send CLUSTER FAILOVER to a replica"
	ErrSetSlotUnknownNode = "ERR I don't know about node %s"
	ErrSetSlotNotMaster   = "ERR Target node is not a master"
	ErrMeetTwoGroups      = "ERR both nodes are already in clusters of several nodes: CLUSTER FORGET or RESET one side first"
	ErrMeetConflict       = "ERR the joining node serves slot %d, which node %s serves"
	ErrClusterNoLeader    = "ERR the cluster topology has no leader (a majority of its voters is unreachable): it cannot change now"
)
