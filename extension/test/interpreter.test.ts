import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
    checkArgs,
    environmentExecutable,
    expandVariables,
    type CheckOutcome,
    installCommandLine,
    parseCheck,
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
        // with the extension's bundled launcher, the interpreter runs that script
        assert.deepEqual(serverArgs(found, [], '/ext/bundled/tool/server.py'), ['run', '-n', 'ml', 'python', '/ext/bundled/tool/server.py']);
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

    it('runs the check script with the interpreter\'s own arguments', () => {
        const conda = { command: 'conda', args: ['run', '-n', 'ml', 'python'], source: 'setting' as const };
        const args = checkArgs(conda);
        assert.deepEqual(args.slice(0, 5), ['run', '-n', 'ml', 'python', '-c']);
        assert.match(args[5] ?? '', /find_spec/);
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

/** Runs the real check script with a real program, the way the extension does. */
function check(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CheckOutcome> {
    return new Promise((resolve) => {
        execFile(command, checkArgs({ command, args, source: 'setting' }), { env }, (error, stdout, stderr) => {
            const code = (error as NodeJS.ErrnoException | null)?.code;
            const spawnError = code === 'ENOENT' || code === 'EACCES' ? String(error?.message) : undefined;
            resolve(parseCheck(stdout, stderr, spawnError));
        });
    });
}

// The Python that runs these tests has onnxlint's dependencies (the test set-up installs them).
const REPO = path.resolve(__dirname, '..', '..');
const PYTHON = process.env.ONNXLINT_TEST_PYTHON ?? 'python3';

describe('the interpreter check (real processes)', () => {
    it('finds onnxlint and every module the server needs', async () => {
        const found = await check(PYTHON, [], { ...process.env, PYTHONPATH: REPO });
        assert.equal(found.kind, 'ok');
    });

    it('names the modules a partial install lacks', async () => {
        // -S: no site-packages, so pygls, lsprotocol and libcst are gone; onnxlint comes from the checkout.
        const found = await check(PYTHON, ['-S'], { ...process.env, PYTHONPATH: REPO });
        assert.deepEqual(found, { kind: 'partial', version: '0.1.0', missing: ['pygls', 'lsprotocol', 'libcst'] });
    });

    it('tells a Python without onnxlint', async () => {
        const found = await check(PYTHON, ['-S', '-I']);
        assert.deepEqual(found, { kind: 'not-installed' });
    });

    it('tells a program that is not a Python (/bin/false) and one that does not exist', async () => {
        assert.equal((await check('/bin/false', [])).kind, 'not-python');
        const missing = await check('/nonexistent/python3', []);
        assert.ok(missing.kind === 'not-python', JSON.stringify(missing));
        assert.match(missing.reason, /ENOENT/);
    });
});

describe('environmentExecutable', () => {
    it("uses the active environment's path as it is when it is an executable (no resolve, which may start Python)", async () => {
        let resolved = 0;
        const found = await environmentExecutable({
            getActiveEnvironmentPath: () => ({ id: 'venv', path: process.execPath }),
            resolveEnvironment: () => {
                resolved += 1;
                return Promise.resolve({ executable: { uri: { fsPath: '/elsewhere/python' } } });
            },
        });
        assert.equal(found, process.execPath);
        assert.equal(resolved, 0);
    });

    it("resolves a path that is not an executable file (a conda environment's folder)", async () => {
        const folder = path.dirname(process.execPath);
        const asked: string[] = [];
        const found = await environmentExecutable({
            getActiveEnvironmentPath: () => ({ id: 'conda', path: folder }),
            resolveEnvironment: (env) => {
                asked.push(env.path);
                return Promise.resolve({ executable: { uri: { fsPath: '/opt/conda/envs/ml/bin/python' } } });
            },
        });
        assert.equal(found, '/opt/conda/envs/ml/bin/python');
        assert.deepEqual(asked, [folder]);
    });
});
