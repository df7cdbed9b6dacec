// Which Python runs the server. Pure apart from filesystem lookups, so node:test can run it.
import * as fs from 'node:fs';
import * as path from 'node:path';

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

/** A command that starts Python: `command` plus leading `args` (e.g. `conda run -n ml python`). */
export interface Interpreter {
    command: string;
    args: string[];
    source: InterpreterSource;
}

export interface ResolveInputs {
    /** `onnxlint.interpreter`, already normalised to a list (empty when unset). */
    setting: string[];
    /** The Python extension's active environment executable, if that extension is installed. */
    pythonExtension: () => Promise<string | undefined>;
    /** Finds an executable on PATH. */
    which: (name: string) => string | undefined;
    workspaceFolder: string | undefined;
    home: string;
    env: Record<string, string | undefined>;
}

/** Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function expandVariables(
    value: string,
    workspaceFolder: string | undefined,
    home: string,
    env: Record<string, string | undefined>,
): string {
    let out = value.replace(/\$\{(workspaceFolder|userHome|env:([^}]+))\}/g, (whole: string, name: string, envName?: string) => {
        if (name === 'workspaceFolder') {
            return workspaceFolder ?? whole;
        }
        if (name === 'userHome') {
            return home;
        }
        return env[envName ?? ''] ?? '';
    });
    if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) {
        out = home + out.slice(1);
    }
    return out;
}

/**
 * The setting wins, then the Python extension's environment, then `python3` on PATH (the order the
 * VS Code Python-tool template and ruff-vscode use). Returns undefined when nothing is found.
 */
export async function resolveInterpreter(inputs: ResolveInputs): Promise<Interpreter | undefined> {
    const setting = inputs.setting.map((part) => part.trim()).filter((part) => part !== '');
    if (setting.length > 0) {
        const [first, ...rest] = setting.map((part) =>
            expandVariables(part, inputs.workspaceFolder, inputs.home, inputs.env),
        ) as [string, ...string[]];
        // A relative path like `.venv/bin/python` is relative to the workspace, not to VS Code's cwd.
        const command =
            inputs.workspaceFolder !== undefined && !path.isAbsolute(first) && /[\\/]/.test(first)
                ? path.join(inputs.workspaceFolder, first)
                : first;
        return { command, args: rest, source: 'setting' };
    }
    let fromExtension: string | undefined;
    try {
        fromExtension = await inputs.pythonExtension();
    } catch {
        fromExtension = undefined; // an extension failing to answer is the same as no answer
    }
    if (fromExtension !== undefined && fromExtension !== '') {
        return { command: fromExtension, args: [], source: 'python-extension' };
    }
    const onPath = inputs.which(process.platform === 'win32' ? 'python' : 'python3');
    if (onPath !== undefined) {
        return { command: onPath, args: [], source: 'path' };
    }
    return undefined;
}

/** The Python extension's environments API, as far as `environmentExecutable` uses it. */
export interface EnvironmentLookup<E extends { readonly path: string }> {
    getActiveEnvironmentPath(): E;
    resolveEnvironment(env: E): Promise<{ readonly executable: { readonly uri?: { readonly fsPath: string } } } | undefined>;
}

/**
 * The executable of the active environment. Its path is the executable itself for most
 * environments (a venv, a system Python): that is used as it is, since resolveEnvironment may start
 * the interpreter to ask it about itself, on the way to the first diagnostics. Only a path that is
 * not an executable file (a conda environment's folder, say) is resolved.
 */
export async function environmentExecutable<E extends { readonly path: string }>(
    lookup: EnvironmentLookup<E>,
    isExecutable: (file: string) => boolean = defaultIsExecutable,
): Promise<string | undefined> {
    const active = lookup.getActiveEnvironmentPath();
    if (active.path !== '' && isExecutable(active.path)) {
        return active.path;
    }
    const env = await lookup.resolveEnvironment(active);
    return env?.executable.uri?.fsPath;
}

/** Looks `name` up on `PATH` like a shell would. */
export function which(
    name: string,
    envPath: string | undefined = process.env.PATH,
    isExecutable: (file: string) => boolean = defaultIsExecutable,
): string | undefined {
    const extensions = process.platform === 'win32' ? ['.exe', '.cmd', '.bat', ''] : [''];
    for (const dir of (envPath ?? '').split(path.delimiter)) {
        if (dir === '') {
            continue;
        }
        for (const ext of extensions) {
            const candidate = path.join(dir, name + ext);
            if (isExecutable(candidate)) {
                return candidate;
            }
        }
    }
    return undefined;
}

function defaultIsExecutable(file: string): boolean {
    try {
        fs.accessSync(file, fs.constants.X_OK);
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

/** The modules `python -m onnxlint server` imports: a partial install lacks one of them. */
export const SERVER_MODULES = ['onnxlint', 'pygls', 'lsprotocol', 'libcst'] as const;

const CHECK_MARKER = 'onnxlint-check:';

/**
 * Prints one marked JSON line: onnxlint's version (when it imports) and the server modules that
 * are missing. Only Python prints it, so any other program (`/bin/false`) is told apart.
 */
export const CHECK_SCRIPT = [
    'import importlib.util as u, json, sys',
    `missing = [m for m in ${JSON.stringify(SERVER_MODULES)} if u.find_spec(m) is None]`,
    'version = None',
    'if "onnxlint" not in missing:',
    '    import onnxlint',
    '    version = onnxlint.__version__',
    `print("${CHECK_MARKER}" + json.dumps({"version": version, "missing": missing, "python": sys.version.split()[0]}))`,
].join('\n');

/** What the interpreter check found. */
export type CheckOutcome =
    | { kind: 'ok'; version: string }
    | { kind: 'not-installed' }
    | { kind: 'partial'; version: string | undefined; missing: string[] }
    | { kind: 'not-python'; reason: string };

/**
 * Reads the check's output. `spawnError` is set when the program could not be started at all
 * (ENOENT, EACCES); no marked line means it is not a Python that ran the script.
 */
export function parseCheck(stdout: string, stderr: string, spawnError?: string): CheckOutcome {
    const line = stdout.split(/\r?\n/).find((l) => l.startsWith(CHECK_MARKER));
    if (spawnError !== undefined || line === undefined) {
        const last = stderr.trim().split(/\r?\n/).pop() ?? '';
        const reason = spawnError ?? (last !== '' ? last : 'it printed nothing a Python would print');
        return { kind: 'not-python', reason };
    }
    let found: { version?: unknown; missing?: unknown };
    try {
        found = JSON.parse(line.slice(CHECK_MARKER.length)) as { version?: unknown; missing?: unknown };
    } catch {
        return { kind: 'not-python', reason: `unexpected output: ${line}` };
    }
    const missing = Array.isArray(found.missing) ? found.missing.map(String) : [];
    const version = typeof found.version === 'string' ? found.version : undefined;
    if (missing.includes('onnxlint')) {
        return { kind: 'not-installed' };
    }
    if (missing.length > 0) {
        return { kind: 'partial', version, missing };
    }
    return { kind: 'ok', version: version ?? '?' };
}

/**
 * The argv that starts the server: the extension's launcher script when it is bundled (it runs the
 * interpreter's onnxlint, or the bundled one when the interpreter has none), else `-m onnxlint server`.
 */
export function serverArgs(interpreter: Interpreter, extraArgs: readonly string[], tool?: string): string[] {
    const start = tool !== undefined ? [tool] : ['-m', 'onnxlint', 'server'];
    return [...interpreter.args, ...start, ...extraArgs];
}

/** The argv that checks onnxlint is importable and prints its version. */
export function checkArgs(interpreter: Interpreter): string[] {
    return [...interpreter.args, '-c', CHECK_SCRIPT];
}

/** How the interpreter is named in messages. */
export function describe(interpreter: Interpreter): string {
    return [interpreter.command, ...interpreter.args].join(' ');
}

function quote(arg: string, windows: boolean): string {
    if (/^[\w@%+=:,./\\-]+$/.test(arg)) {
        return arg;
    }
    return windows ? `"${arg.replace(/"/g, '""')}"` : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The shell line that installs onnxlint into the interpreter's environment. */
export function installCommandLine(interpreter: Interpreter, windows = process.platform === 'win32'): string {
    const argv = [interpreter.command, ...interpreter.args, '-m', 'pip', 'install', 'onnxlint'];
    const line = argv.map((arg) => quote(arg, windows)).join(' ');
    // PowerShell (the Windows default) only runs a quoted program through the call operator.
    return windows && line.startsWith('"') ? `& ${line}` : line;
}
