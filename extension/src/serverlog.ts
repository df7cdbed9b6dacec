// The server's stderr, line by line, as log records. Pure (no `vscode` import) so node:test runs it.

export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';

// `python -m onnxlint server` logs `2026-11-23 18:10:36,022 WARNING pygls.protocol: ...`; the
// bundled launcher (bundled/tool/server.py) writes `INFO onnxlint: ...` before logging is set up,
// and Python's own default format is `WARNING:name:...`.
const RECORD = /^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\s+)?(DEBUG|INFO|WARNING|ERROR|CRITICAL)(?:\s+|:)(.*)$/;
// A Python warning (`warnings.showwarning`): `path.py:12: DeprecationWarning: ...`; the source line
// printed under it keeps its level.
const PY_WARNING = /^.+:\d+: [A-Za-z_.]*Warning: /;
const LEVELS: Record<string, Level> = {
    DEBUG: 'debug',
    INFO: 'info',
    WARNING: 'warn',
    ERROR: 'error',
    CRITICAL: 'error',
};

/**
 * One stderr line as a record at its own level, without Python's timestamp (the output channel adds
 * its own). A line that starts no record (a traceback's continuation) keeps the previous record's
 * level; output that is not a log record at all (a crash before logging is set up) is an error.
 */
export function serverLogLine(line: string, previous: Level | undefined): { level: Level; text: string } {
    const m = RECORD.exec(line);
    if (m !== null) {
        return { level: LEVELS[m[1] ?? ''] ?? 'info', text: m[2] ?? '' };
    }
    if (PY_WARNING.test(line)) {
        return { level: 'warn', text: line };
    }
    return { level: previous ?? 'error', text: line };
}
