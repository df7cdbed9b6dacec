import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CLIENT_COMMANDS, SERVER_COMMANDS } from '../src/commands';
import { classifyChange, DEFAULTS, initializationOptions, readSettings, type ServerSettings } from '../src/settings';

interface Property {
    default?: unknown;
    description?: string;
    markdownDescription?: string;
    scope?: string;
}
interface Manifest {
    contributes: {
        commands: { command: string; title: string }[];
        configuration: { properties: Record<string, Property> };
    };
    capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
}

// The tests run from out/test/, two levels below the repository root.
const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as Manifest;
const properties = manifest.contributes.configuration.properties;

/** A reader over plain `onnxlint.*` values, as `getConfiguration('onnxlint')` would give them. */
function reader(values: Record<string, unknown>): { get(key: string): unknown } {
    return { get: (key: string) => values[key] };
}

function packageDefaults(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, prop] of Object.entries(properties)) {
        out[key.replace(/^onnxlint\./, '')] = prop.default;
    }
    return out;
}

/** `{deep: {onSave: x}}` -> `{'deep.onSave': x}`: the keys the settings object is made of. */
function flatten(obj: Record<string, unknown>, prefix = ''): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(obj)) {
        const name = prefix + key;
        // severity is a map whose keys are rule codes, not settings.
        if (value !== null && typeof value === 'object' && !Array.isArray(value) && key !== 'severity') {
            Object.assign(out, flatten(value as Record<string, unknown>, `${name}.`));
        } else {
            out[name] = value;
        }
    }
    return out;
}

describe('package.json', () => {
    it('contributes exactly the settings the server receives, with the same defaults', () => {
        const settingKeys = Object.keys(properties).map((k) => k.replace(/^onnxlint\./, '')).sort();
        assert.deepEqual(settingKeys, Object.keys(flatten({ ...DEFAULTS })).sort());
        assert.deepEqual(readSettings(reader(packageDefaults())), DEFAULTS);
    });

    it('gives every setting a description, a scope and a default', () => {
        for (const [key, prop] of Object.entries(properties)) {
            assert.ok(prop.description ?? prop.markdownDescription, `${key} has no description`);
            assert.ok(prop.scope, `${key} has no scope`);
            assert.ok('default' in prop, `${key} has no default`);
        }
    });

    it('contributes the client and server commands, each with a title', () => {
        const contributed = manifest.contributes.commands.map((c) => c.command).sort();
        assert.deepEqual(contributed, [...CLIENT_COMMANDS, ...SERVER_COMMANDS].sort());
        for (const c of manifest.contributes.commands) {
            assert.ok(c.title.length > 0);
        }
    });

    it('restricts the settings that choose what code runs in an untrusted workspace', () => {
        const untrusted = manifest.capabilities.untrustedWorkspaces;
        assert.equal(untrusted.supported, 'limited');
        for (const key of ['onnxlint.interpreter', 'onnxlint.args', 'onnxlint.deep.onSave']) {
            assert.ok(untrusted.restrictedConfigurations.includes(key), key);
        }
        for (const key of untrusted.restrictedConfigurations) {
            assert.ok(key in properties, `${key} is restricted but not contributed`);
        }
    });
});

describe('readSettings', () => {
    it('gives the defaults for an empty configuration', () => {
        assert.deepEqual(readSettings(reader({})), DEFAULTS);
    });

    it('maps every value through', () => {
        const settings = readSettings(
            reader({
                enable: false,
                select: ['OLX2'],
                ignore: ['OLX401'],
                severity: { OLX201: 'hint' },
                debounceMs: 0,
                'deep.onSave': true,
                'deep.timeout': 12,
                'deep.interpreter': '/opt/py',
                'deep.prestart': false,
                'deep.proveFixes': false,
                interpreter: ['conda', 'run', 'python'],
                importStrategy: 'useBundled',
                args: ['--log-level', 'debug'],
                'trace.server': 'verbose',
            }),
        );
        const expected: ServerSettings = {
            enable: false,
            select: ['OLX2'],
            ignore: ['OLX401'],
            severity: { OLX201: 'hint' },
            debounceMs: 0,
            deep: { onSave: true, timeout: 12, interpreter: '/opt/py', prestart: false, proveFixes: false },
            interpreter: ['conda', 'run', 'python'],
            importStrategy: 'useBundled',
            args: ['--log-level', 'debug'],
            trace: { server: 'verbose' },
        };
        assert.deepEqual(settings, expected);
    });

    it('accepts the interpreter as a single string path', () => {
        assert.deepEqual(readSettings(reader({ interpreter: '/venv/bin/python' })).interpreter, ['/venv/bin/python']);
        assert.deepEqual(readSettings(reader({ interpreter: '  ' })).interpreter, []);
    });

    it('falls back to the default for values of the wrong type', () => {
        const settings = readSettings(
            reader({
                enable: 'yes',
                select: 'OLX2',
                ignore: [1, 'OLX4', null],
                severity: { OLX201: 'fatal', OLX202: 'WARNING', OLX203: 3 },
                debounceMs: -5,
                'deep.timeout': 0,
                'deep.interpreter': '',
                'trace.server': 'loud',
            }),
        );
        assert.equal(settings.enable, true);
        assert.deepEqual(settings.select, ['OLX2']);
        assert.deepEqual(settings.ignore, ['OLX4']);
        assert.deepEqual(settings.severity, { OLX202: 'warning' });
        assert.equal(settings.debounceMs, 150);
        assert.equal(settings.deep.timeout, 300);
        assert.equal(settings.deep.interpreter, null);
        assert.equal(settings.trace.server, 'off');
    });
});

describe('initializationOptions', () => {
    it('has the agreed shape, with the trust flag', () => {
        const options = initializationOptions(DEFAULTS, false);
        assert.deepEqual(Object.keys(options).sort(), ['clientCommands', 'globalSettings', 'settings', 'trusted']);
        assert.deepEqual(options.settings, DEFAULTS);
        assert.deepEqual(options.globalSettings, DEFAULTS);
        assert.deepEqual(options.clientCommands, [
            'onnxlint.restart',
            'onnxlint.showLogs',
            'onnxlint.selectInterpreter',
            'onnxlint.showAnalysisResult',
            'onnxlint.setArguments',
            'onnxlint.openLocation',
        ]);
        assert.equal(options.trusted, false);
        assert.equal(initializationOptions(DEFAULTS, true).trusted, true);
        // It must survive the JSON-RPC round trip unchanged (no undefined, no functions).
        assert.deepEqual(JSON.parse(JSON.stringify(options)), options);
    });
});

describe('classifyChange', () => {
    const base = DEFAULTS;
    const cases: [string, Partial<ServerSettings>, string][] = [
        ['nothing', {}, 'none'],
        ['interpreter', { interpreter: ['/x/python'] }, 'restart'],
        ['args', { args: ['-v'] }, 'restart'],
        ['enable', { enable: false }, 'restart'],
        ['deep interpreter', { deep: { ...base.deep, interpreter: '/y' } }, 'restart'],
        ['deep timeout', { deep: { ...base.deep, timeout: 10 } }, 'restart'],
        ['deep onSave', { deep: { ...base.deep, onSave: true } }, 'notify'],
        ['select', { select: ['OLX1'] }, 'notify'],
        ['severity', { severity: { OLX201: 'hint' } }, 'notify'],
        ['debounce', { debounceMs: 10 }, 'notify'],
        ['trace only', { trace: { server: 'verbose' } }, 'none'],
        ['trace and select', { trace: { server: 'verbose' }, select: ['OLX1'] }, 'notify'],
    ];
    for (const [name, change, expected] of cases) {
        it(`${name} -> ${expected}`, () => {
            assert.equal(classifyChange(base, { ...base, ...change }), expected);
        });
    }
});
