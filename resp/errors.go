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
)
