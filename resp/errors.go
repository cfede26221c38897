package resp

// Protocol errors, byte for byte as Redis's: the client is disconnected
// after its reply.
const (
	errProtoMultibulkLen = "ERR Protocol error: invalid multibulk length"
	errProtoBulkLen      = "ERR Protocol error: invalid bulk length"
	errProtoExpected     = "ERR Protocol error: expected '$', got '%c'"
	errProtoInlineTooBig = "ERR Protocol error: too big inline request"
	errProtoMbulkTooBig  = "ERR Protocol error: too big mbulk count string"
	errProtoBulkTooBig   = "ERR Protocol error: too big bulk count string"
	errProtoQuotes       = "ERR Protocol error: unbalanced quotes in request"
	errProtoUnauthMbulk  = "ERR Protocol error: unauthenticated multibulk length"
	errProtoUnauthBulk   = "ERR Protocol error: unauthenticated bulk length"
)

// Connection errors, byte for byte as Redis's: the client is told, then
// disconnected.
const (
	ErrMaxClients    = "ERR max number of clients reached"
	ErrQueryBufLimit = "ERR client query buffer exceeds client-query-buffer-limit; closing connection"
	// ErrProtectedMode is Redis 7.0's text, its typo included.
	ErrProtectedMode = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."
)
