// Package resp is the RESP2/RESP3 wire codec: a request parser that slices
// arguments out of the caller's buffer and enforces Redis's protocol limits
// (ParseRequest, Partial), and reply appenders that complement redcon's
// Append helpers. It holds no server state and knows nothing of commands.
package resp
