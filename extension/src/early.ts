// The server's process, started the moment the extension activates: Python's start-up (importing
// the server, ~0.5-1 s) then overlaps with loading the language client's code, which the entry
// point loads only after this. Done only when the interpreter is known without the Python
// extension (the `onnxlint.interpreter` setting, or `python3` on PATH when that extension is not
// installed); the controller uses the process for its first start if it would have started the
// same command, and stops it otherwise.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { describe, type Interpreter, resolveInterpreter, serverArgs, which } from './interpreter';
import { PYTHON_EXTENSION_ID } from './python';
import { type ImportStrategy, readSettings } from './settings';

export interface ServerLaunch {
    command: string;
    args: string[];
    cwd: string | undefined;
    strategy: ImportStrategy;
}

/** The bundled server's launcher (`bundled/tool/server.py`, made by extension/scripts/bundle_python.py), if the package has it. */
export function bundledTool(extensionPath: string): string | undefined {
    const tool = path.join(extensionPath, 'bundled', 'tool', 'server.py');
    return fs.existsSync(tool) ? tool : undefined;
}

/** Starts the server for the language client: stdio piped, output unbuffered. */
export function launch(spec: ServerLaunch): ChildProcess {
    const child = spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: { ...process.env, PYTHONUNBUFFERED: '1', ONNXLINT_IMPORT_STRATEGY: spec.strategy },
        stdio: 'pipe',
        windowsHide: true,
    });
    child.on('error', () => undefined); // ENOENT, EACCES: the client's start fails and says why
    return child;
}

export function launchOf(
    interpreter: Interpreter,
    extraArgs: readonly string[],
    cwd: string | undefined,
    tool: string | undefined,
    strategy: ImportStrategy,
): ServerLaunch {
    return { command: interpreter.command, args: serverArgs(interpreter, extraArgs, tool), cwd, strategy };
}

export function sameLaunch(a: ServerLaunch, b: ServerLaunch): boolean {
    return (
        a.command === b.command &&
        a.cwd === b.cwd &&
        a.strategy === b.strategy &&
        JSON.stringify(a.args) === JSON.stringify(b.args)
    );
}

export interface EarlyServer {
    launch: ServerLaunch;
    process: ChildProcess;
    what: string;
}

export async function startEarly(extensionPath: string): Promise<EarlyServer | undefined> {
    if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined) {
        return undefined; // the Python extension's interpreter: known only once it has activated
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    const settings = readSettings(vscode.workspace.getConfiguration('onnxlint', folder));
    if (!settings.enable) {
        return undefined;
    }
    const cwd = folder?.uri.fsPath;
    const interpreter = await resolveInterpreter({
        setting: settings.interpreter,
        pythonExtension: () => Promise.resolve(undefined),
        which: (name) => which(name),
        workspaceFolder: cwd,
        home: os.homedir(),
        env: process.env,
    });
    if (interpreter === undefined) {
        return undefined;
    }
    const spec = launchOf(interpreter, settings.args, cwd, bundledTool(extensionPath), settings.importStrategy);
    return { launch: spec, process: launch(spec), what: describe(interpreter) };
}
