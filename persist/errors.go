package persist

import "github.com/ratekv/ratekv/journal"

// The damage a log file or a snapshot can show; see package journal.
type (
	TornError    = journal.TornError
	CorruptError = journal.CorruptError
)
