// Settings as the server sees them. Pure (no `vscode` import) so node:test can run it.
import { CLIENT_COMMANDS } from './commands';

export type Severity = 'error' | 'warning' | 'info' | 'hint';
export type TraceLevel = 'off' | 'messages' | 'verbose';
/** fromEnvironment: the interpreter's onnxlint when it has one, else the bundled one; useBundled: always the bundled one. */
export type ImportStrategy = 'fromEnvironment' | 'useBundled';

/** The settings object sent to the server: the `onnxlint.*` configuration, camelCase, without the prefix. */
export interface ServerSettings {
    enable: boolean;
    select: string[];
    ignore: string[];
    severity: Record<string, Severity>;
    debounceMs: number;
    deep: { onSave: boolean; timeout: number; interpreter: string | null; prestart: boolean; proveFixes: boolean };
    interpreter: string[];
    importStrategy: ImportStrategy;
    args: string[];
    trace: { server: TraceLevel };
}

/** What `vscode.WorkspaceConfiguration.get` offers; tests pass a plain object reader. */
export interface ConfigReader {
    get(key: string): unknown;
}

export const DEFAULTS: ServerSettings = {
    enable: true,
    select: [],
    ignore: [],
    severity: {},
    debounceMs: 150,
    deep: { onSave: false, timeout: 300, interpreter: null, prestart: true, proveFixes: true },
    interpreter: [],
    importStrategy: 'fromEnvironment',
    args: [],
    trace: { server: 'off' },
};

const SEVERITIES: ReadonlySet<string> = new Set(['error', 'warning', 'info', 'hint']);
const TRACE_LEVELS: ReadonlySet<string> = new Set(['off', 'messages', 'verbose']);

function stringList(value: unknown): string[] {
    if (typeof value === 'string') {
        return value.trim() === '' ? [] : [value];
    }
    if (Array.isArray(value)) {
        return value.filter((v): v is string => typeof v === 'string');
    }
    return [];
}

function finiteNumber(value: unknown, fallback: number, min: number): number {
    return typeof value === 'number' && Number.isFinite(value) && value >= min ? value : fallback;
}

/**
 * Builds the server's settings object from the configuration. Values of the wrong type fall back to
 * the default (VS Code only warns about them in settings.json), so the server always gets the shape
 * it documents.
 */
export function readSettings(config: ConfigReader): ServerSettings {
    const severity: Record<string, Severity> = {};
    const rawSeverity = config.get('severity');
    if (rawSeverity !== null && typeof rawSeverity === 'object' && !Array.isArray(rawSeverity)) {
        for (const [code, level] of Object.entries(rawSeverity as Record<string, unknown>)) {
            if (typeof level === 'string' && SEVERITIES.has(level.toLowerCase())) {
                severity[code] = level.toLowerCase() as Severity;
            }
        }
    }
    const deepInterpreter = config.get('deep.interpreter');
    const trace = config.get('trace.server');
    const enable = config.get('enable');
    const onSave = config.get('deep.onSave');
    const prestart = config.get('deep.prestart');
    const proveFixes = config.get('deep.proveFixes');
    return {
        enable: typeof enable === 'boolean' ? enable : DEFAULTS.enable,
        select: stringList(config.get('select')),
        ignore: stringList(config.get('ignore')),
        severity,
        debounceMs: finiteNumber(config.get('debounceMs'), DEFAULTS.debounceMs, 0),
        deep: {
            onSave: typeof onSave === 'boolean' ? onSave : DEFAULTS.deep.onSave,
            timeout: finiteNumber(config.get('deep.timeout'), DEFAULTS.deep.timeout, 1),
            interpreter:
                typeof deepInterpreter === 'string' && deepInterpreter.trim() !== '' ? deepInterpreter : null,
            prestart: typeof prestart === 'boolean' ? prestart : DEFAULTS.deep.prestart,
            proveFixes: typeof proveFixes === 'boolean' ? proveFixes : DEFAULTS.deep.proveFixes,
        },
        interpreter: stringList(config.get('interpreter')),
        importStrategy: config.get('importStrategy') === 'useBundled' ? 'useBundled' : 'fromEnvironment',
        args: stringList(config.get('args')),
        trace: { server: typeof trace === 'string' && TRACE_LEVELS.has(trace) ? (trace as TraceLevel) : 'off' },
    };
}

export interface InitializationOptions {
    settings: ServerSettings;
    globalSettings: ServerSettings;
    clientCommands: string[];
    trusted: boolean;
}

export function initializationOptions(settings: ServerSettings, trusted: boolean): InitializationOptions {
    return {
        settings,
        globalSettings: settings,
        clientCommands: [...CLIENT_COMMANDS],
        trusted,
    };
}

export type ConfigChange = 'restart' | 'notify' | 'none';

function same(a: unknown, b: unknown): boolean {
    return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * What a settings change needs. `enable`, `interpreter`, `args` and the deep worker's interpreter and
 * timeout change the processes themselves, so they need a restart; the rest reaches the running server
 * through workspace/didChangeConfiguration. `trace.server` is applied by vscode-languageclient itself.
 */
export function classifyChange(before: ServerSettings, after: ServerSettings): ConfigChange {
    if (
        before.enable !== after.enable ||
        !same(before.interpreter, after.interpreter) ||
        before.importStrategy !== after.importStrategy ||
        !same(before.args, after.args) ||
        before.deep.interpreter !== after.deep.interpreter ||
        before.deep.timeout !== after.deep.timeout
    ) {
        return 'restart';
    }
    const strip = (s: ServerSettings): unknown => ({ ...s, trace: undefined });
    return same(strip(before), strip(after)) ? 'none' : 'notify';
}
