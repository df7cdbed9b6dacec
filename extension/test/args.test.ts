import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { joinArgs, splitArgs } from '../src/args';

describe('splitArgs', () => {
    it('splits on spaces, groups quotes, keeps escapes', () => {
        assert.deepEqual(splitArgs('--config configs/small.yaml  --name "my model" -x \'a b\' c\\ d'), [
            '--config',
            'configs/small.yaml',
            '--name',
            'my model',
            '-x',
            'a b',
            'c d',
        ]);
        assert.deepEqual(splitArgs(''), []);
        assert.deepEqual(splitArgs('--empty ""'), ['--empty', '']);
        assert.throws(() => splitArgs('--name "open'), /unclosed/);
    });
    it('joinArgs reads back the same', () => {
        const argv = ['--config', 'a b.yaml', "it's", '', '--x=1'];
        assert.deepEqual(splitArgs(joinArgs(argv)), argv);
    });
});
