import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serverLogLine } from '../src/serverlog';

describe('serverLogLine', () => {
    it('maps Python log levels and drops the timestamp', () => {
        assert.deepEqual(serverLogLine('2026-11-23 18:10:36,022 WARNING pygls.protocol: slow', undefined), {
            level: 'warn',
            text: 'pygls.protocol: slow',
        });
        assert.deepEqual(serverLogLine('2026-11-23 18:10:36,022 INFO onnxlint.server: started', 'error'), {
            level: 'info',
            text: 'onnxlint.server: started',
        });
        assert.equal(serverLogLine('2026-11-23 18:10:36,022 DEBUG x: y', undefined).level, 'debug');
        assert.equal(serverLogLine('2026-11-23 18:10:36,022 CRITICAL x: y', undefined).level, 'error');
    });

    it("reads the bundled launcher's records and Python's default format, which carry no timestamp", () => {
        assert.deepEqual(
            serverLogLine('INFO onnxlint: the bundled onnxlint runs (the interpreter has no onnxlint)', undefined),
            { level: 'info', text: 'onnxlint: the bundled onnxlint runs (the interpreter has no onnxlint)' },
        );
        assert.deepEqual(serverLogLine('WARNING:pygls.protocol:slow', 'error'), { level: 'warn', text: 'pygls.protocol:slow' });
        assert.equal(serverLogLine('ERROR onnxlint.server: boom', 'info').level, 'error');
        // Not a record: a word that merely starts like a level name.
        assert.equal(serverLogLine('INFORMATION is not a level', undefined).level, 'error');
    });

    it("puts Python's warnings at warning level, with the source line under them", () => {
        const warning = serverLogLine('/x/libcst/_parser.py:12: DeprecationWarning: old', undefined);
        assert.equal(warning.level, 'warn');
        assert.equal(serverLogLine('  import imp', warning.level).level, 'warn');
    });

    it('keeps a traceback at its record level, and calls anything else an error', () => {
        assert.deepEqual(serverLogLine('  File "x.py", line 3', 'warn'), { level: 'warn', text: '  File "x.py", line 3' });
        assert.equal(serverLogLine('No module named onnxlint', undefined).level, 'error');
    });
});
