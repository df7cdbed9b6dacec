import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { linkLocations } from '../src/reportlinks';

describe('linkLocations', () => {
    it('turns the report\'s file links into links that open the file at the line', () => {
        const html = '<a class="loc" href="file:///work/my%20project/vision/detector.py#L16"><code>vision/detector.py:16</code></a>';
        const out = linkLocations(html);
        const href = /href="command:onnxlint\.openLocation\?([^"]+)"/.exec(out);
        assert.ok(href, out);
        assert.deepEqual(JSON.parse(decodeURIComponent(href[1] ?? '')), ['/work/my project/vision/detector.py', 16]);
        assert.ok(out.endsWith('<code>vision/detector.py:16</code></a>'));
    });
    it('leaves other links alone', () => {
        const html = '<a href="https://onnxlint.github.io/onnxlint/rules/OLX802/">x</a>';
        assert.equal(linkLocations(html), html);
    });
});
