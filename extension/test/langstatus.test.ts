import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { languageStatus } from '../src/langstatus';

describe('languageStatus', () => {
    it('is busy with the target while a deep analysis runs', () => {
        assert.deepEqual(languageStatus('running', 'onnxlint 0.1 in .venv', false, 'analyzing detector'), {
            text: 'onnxlint: analyzing',
            detail: 'analyzing detector',
            busy: true,
            error: false,
        });
    });
    it('says the server state otherwise, and restricted mode', () => {
        assert.equal(languageStatus('running', 'x', false, undefined).text, 'onnxlint');
        assert.equal(languageStatus('running', 'x', false, undefined).busy, false);
        const restricted = languageStatus('running', 'x', true, undefined);
        assert.equal(restricted.text, 'onnxlint (restricted)');
        assert.match(restricted.detail, /trust the workspace/);
        assert.equal(languageStatus('starting', '', false, undefined).busy, true);
        assert.equal(languageStatus('error', 'it stopped', false, 'analyzing x').error, true);
        assert.equal(languageStatus('error', 'it stopped', false, 'analyzing x').text, 'onnxlint: error');
    });
});
