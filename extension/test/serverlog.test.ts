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

    it('keeps a traceback at its record level, and calls anything else an error', () => {
        assert.deepEqual(serverLogLine('  File "x.py", line 3', 'warn'), { level: 'warn', text: '  File "x.py", line 3' });
        assert.equal(serverLogLine('No module named onnxlint', undefined).level, 'error');
    });
});
