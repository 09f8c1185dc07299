package obs

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Log field names shared by both daemons.
const (
	FieldDaemon = "daemon"
	FieldMaster = "master"
	FieldCS     = "cs"
	FieldEpoch  = "epoch"
	FieldFrom   = "from"
	FieldTo     = "to"
	FieldReason = "reason"
	FieldPeer   = "peer"
)

// LevelNames are the accepted level names (case-insensitive).
var LevelNames = []string{"debug", "info", "notice", "warn", "warning", "error"}

// ParseLevel maps a MooseFS-style level name to a zerolog level; notice is
// info, since zerolog has no level between info and warn.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return zerolog.DebugLevel, nil
	case "info", "notice":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("LOG_LEVEL %q is not a level (accepted: %s)", s, strings.Join(LevelNames, ", "))
}

// NewLogger logs to w, in console format if w is a terminal, JSON otherwise.
func NewLogger(w *os.File, level, daemon string) (zerolog.Logger, error) {
	fd := w.Fd()
	return NewLoggerTo(w, level, daemon, isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd))
}

// NewLoggerTo is NewLogger with the format chosen by the caller.
func NewLoggerTo(w io.Writer, level, daemon string, console bool) (zerolog.Logger, error) {
	lv, err := ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), err
	}
	if console {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(lv).Hook(stamp{}).With().Str(FieldDaemon, daemon).Logger(), nil
}

// stamp adds the time at microsecond resolution without touching zerolog's
// global TimeFieldFormat.
type stamp struct{}

func (stamp) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
}

// LogFormats are LOG_FORMAT's values: auto (console on a terminal, JSON
// otherwise: to a file, a pipe or the journal), json, console.
var LogFormats = []string{"auto", "json", "console"}

// LogFormatRule is what is wrong with a LOG_FORMAT value ("" when
// nothing), for the config's rules: a bad one is refused with the rest of
// the config, before start goes to the background.
func LogFormatRule(format string) string {
	if slices.Contains(LogFormats, format) {
		return ""
	}
	return "want " + strings.Join(LogFormats, ", ")
}

// DaemonLogger is a daemon's logger on stderr, in format (LogFormats): it
// logs at every level and leaves filtering to zerolog's global level, set
// here from level, so that a reload can change it with SetLevel.
func DaemonLogger(level, format, daemon string) (zerolog.Logger, error) {
	if err := SetLevel(level); err != nil {
		return zerolog.Logger{}, err
	}
	switch format {
	case "auto", "":
		return NewLogger(os.Stderr, "debug", daemon)
	case "json", "console":
		return NewLoggerTo(os.Stderr, "debug", daemon, format == "console")
	}
	return zerolog.Logger{}, fmt.Errorf("LOG_FORMAT %q is not a format (accepted: %s)", format, strings.Join(LogFormats, ", "))
}

// SetLevel sets the global level of every DaemonLogger.
func SetLevel(level string) error {
	lvl, err := ParseLevel(level)
	if err != nil {
		return err
	}
	zerolog.SetGlobalLevel(lvl)
	return nil
}
