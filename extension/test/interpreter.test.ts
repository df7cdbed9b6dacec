import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
    checkArgs,
    expandVariables,
    installCommandLine,
    type ResolveInputs,
    resolveInterpreter,
    serverArgs,
    which,
} from '../src/interpreter';

function inputs(over: Partial<ResolveInputs>): ResolveInputs {
    return {
        setting: [],
        pythonExtension: () => Promise.resolve(undefined),
        which: () => undefined,
        workspaceFolder: '/ws',
        home: '/home/me',
        env: { VENV: '/opt/venv' },
        ...over,
    };
}

describe('resolveInterpreter', () => {
    it('prefers the setting and does not ask the Python extension', async () => {
        let asked = false;
        const found = await resolveInterpreter(
            inputs({
                setting: ['/usr/bin/python3.11'],
                pythonExtension: () => {
                    asked = true;
                    return Promise.resolve('/from/extension');
                },
                which: () => '/usr/bin/python3',
            }),
        );
        assert.deepEqual(found, { command: '/usr/bin/python3.11', args: [], source: 'setting' });
        assert.equal(asked, false);
    });

    it('keeps the rest of an array setting as leading arguments', async () => {
        const found = await resolveInterpreter(inputs({ setting: ['conda', 'run', '-n', 'ml', 'python'] }));
        assert.deepEqual(found, { command: 'conda', args: ['run', '-n', 'ml', 'python'], source: 'setting' });
        assert.deepEqual(serverArgs(found, ['--verbose']), ['run', '-n', 'ml', 'python', '-m', 'onnxlint', 'server', '--verbose']);
    });

    it('expands variables and resolves relative paths against the workspace', async () => {
        assert.equal((await resolveInterpreter(inputs({ setting: ['${workspaceFolder}/.venv/bin/python'] })))?.command, '/ws/.venv/bin/python');
        assert.equal((await resolveInterpreter(inputs({ setting: ['.venv/bin/python'] })))?.command, path.join('/ws', '.venv/bin/python'));
        assert.equal((await resolveInterpreter(inputs({ setting: ['~/venv/bin/python'] })))?.command, '/home/me/venv/bin/python');
        assert.equal((await resolveInterpreter(inputs({ setting: ['${env:VENV}/bin/python'] })))?.command, '/opt/venv/bin/python');
        // A bare name is left for PATH lookup by the OS, not joined to the workspace.
        assert.equal((await resolveInterpreter(inputs({ setting: ['python3'] })))?.command, 'python3');
    });

    it('ignores blank entries in the setting', async () => {
        const found = await resolveInterpreter(inputs({ setting: ['', '  '], which: () => '/usr/bin/python3' }));
        assert.equal(found?.source, 'path');
    });

    it('uses the Python extension when the setting is empty', async () => {
        const found = await resolveInterpreter(
            inputs({ pythonExtension: () => Promise.resolve('/envs/a/bin/python'), which: () => '/usr/bin/python3' }),
        );
        assert.deepEqual(found, { command: '/envs/a/bin/python', args: [], source: 'python-extension' });
    });

    it('falls back to python3 on PATH when the Python extension has nothing or fails', async () => {
        const seen: string[] = [];
        const lookup = (name: string): string => {
            seen.push(name);
            return `/usr/bin/${name}`;
        };
        const none = await resolveInterpreter(inputs({ which: lookup }));
        assert.deepEqual(none, { command: '/usr/bin/python3', args: [], source: 'path' });
        const failing = await resolveInterpreter(
            inputs({ pythonExtension: () => Promise.reject(new Error('not activated')), which: lookup }),
        );
        assert.equal(failing?.source, 'path');
        assert.deepEqual(seen, ['python3', 'python3']);
    });

    it('returns undefined when nothing is found', async () => {
        assert.equal(await resolveInterpreter(inputs({})), undefined);
    });
});

describe('expandVariables', () => {
    it('leaves unknown variables and a missing workspace alone', () => {
        assert.equal(expandVariables('${workspaceFolder}/x', undefined, '/h', {}), '${workspaceFolder}/x');
        assert.equal(expandVariables('${config:foo}', '/ws', '/h', {}), '${config:foo}');
        assert.equal(expandVariables('${userHome}/py', '/ws', '/h', {}), '/h/py');
        assert.equal(expandVariables('a~b', '/ws', '/h', {}), 'a~b');
    });
});

describe('which', () => {
    it('returns the first executable match on PATH', () => {
        const exists = new Set([path.join('/b', 'python3'), path.join('/c', 'python3')]);
        assert.equal(which('python3', ['/a', '/b', '/c'].join(path.delimiter), (f) => exists.has(f)), path.join('/b', 'python3'));
        assert.equal(which('python3', '', () => true), undefined);
        assert.equal(which('python3', '/a', () => false), undefined);
    });

    it('finds a real executable on the real PATH', () => {
        // node itself is on PATH wherever these tests run.
        const found = which('node');
        assert.ok(found !== undefined && path.isAbsolute(found));
    });
});

describe('commands', () => {
    const interpreter = { command: '/opt/my envs/python', args: [], source: 'setting' as const };

    it('checks the import and prints the version', () => {
        assert.deepEqual(checkArgs(interpreter), ['-c', 'import onnxlint, sys; print(onnxlint.__version__)']);
    });

    it('quotes the install command for a POSIX shell', () => {
        assert.equal(installCommandLine(interpreter, false), "'/opt/my envs/python' -m pip install onnxlint");
        assert.equal(
            installCommandLine({ command: '/usr/bin/python3', args: [], source: 'path' }, false),
            '/usr/bin/python3 -m pip install onnxlint',
        );
        assert.equal(
            installCommandLine({ command: "/it's/python", args: [], source: 'path' }, false),
            "'/it'\\''s/python' -m pip install onnxlint",
        );
    });

    it('quotes the install command for PowerShell', () => {
        assert.equal(
            installCommandLine({ command: 'C:\\Program Files\\Python\\python.exe', args: [], source: 'path' }, true),
            '& "C:\\Program Files\\Python\\python.exe" -m pip install onnxlint',
        );
    });
});
