package service

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
)

// LogHandler writes log records as text (slog's key=value lines) or JSON
// (one object a line), switchable while the process runs (log-format). It
// is safe for concurrent use.
type LogHandler struct {
	json     *atomic.Bool
	text, js slog.Handler
}

// NewLogHandler returns a handler writing to w at level, in format "text"
// or "json".
func NewLogHandler(w io.Writer, level slog.Leveler, format string) *LogHandler {
	opts := &slog.HandlerOptions{Level: level}
	h := &LogHandler{json: new(atomic.Bool), text: slog.NewTextHandler(w, opts), js: slog.NewJSONHandler(w, opts)}
	h.SetFormat(format)
	return h
}

// SetFormat switches the format of h and of the handlers derived from it.
func (h *LogHandler) SetFormat(format string) { h.json.Store(format == "json") }

func (h *LogHandler) current() slog.Handler {
	if h.json.Load() {
		return h.js
	}
	return h.text
}

// Enabled reports whether level is logged.
func (h *LogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.current().Enabled(ctx, level)
}

// Handle writes r in the current format.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.current().Handle(ctx, r)
}

// WithAttrs returns a handler that adds attrs, following h's format.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{json: h.json, text: h.text.WithAttrs(attrs), js: h.js.WithAttrs(attrs)}
}

// WithGroup returns a handler that puts attributes in group name,
// following h's format.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{json: h.json, text: h.text.WithGroup(name), js: h.js.WithGroup(name)}
}
