// Owns the language client: finds the interpreter, checks onnxlint is there, starts and restarts the server.
import { execFile } from 'node:child_process';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    LanguageClient,
    type LanguageClientOptions,
    RevealOutputChannelOn,
    type ServerOptions,
    State,
} from 'vscode-languageclient/node';
import { Coalescer } from './coalesce';
import { SERVER_COMMANDS, TRUST_MESSAGE } from './commands';
import {
    checkArgs,
    describe,
    installCommandLine,
    type Interpreter,
    resolveInterpreter,
    serverArgs,
    which,
} from './interpreter';
import { activeInterpreter, onDidChangeInterpreter, pythonExtensionInstalled } from './python';
import { classifyChange, initializationOptions, readSettings, type ServerSettings } from './settings';
import { Status } from './status';

/** Server commands that act on a file: from the command palette they get the active editor's URI. */
const FILE_COMMANDS: ReadonlySet<string> = new Set(SERVER_COMMANDS);

const RESTART_DELAY_MS = 300;
const CHECK_TIMEOUT_MS = 30_000;
const INSTALL_POLL_MS = 3_000;
const INSTALL_POLL_LIMIT_MS = 15 * 60_000;

interface CheckResult {
    ok: boolean;
    version?: string;
    /** Why it failed, for the log. */
    error?: string;
    /** The interpreter itself could not be run. */
    missingInterpreter?: boolean;
}

function runCheck(interpreter: Interpreter, cwd: string | undefined): Promise<CheckResult> {
    return new Promise((resolve) => {
        execFile(
            interpreter.command,
            checkArgs(interpreter),
            { cwd, timeout: CHECK_TIMEOUT_MS, windowsHide: true },
            (error, stdout, stderr) => {
                if (error === null) {
                    resolve({ ok: true, version: stdout.trim() });
                    return;
                }
                const code = (error as NodeJS.ErrnoException).code;
                resolve({
                    ok: false,
                    error: `${error.message}\n${stderr}`.trim(),
                    missingInterpreter: code === 'ENOENT' || code === 'EACCES',
                });
            },
        );
    });
}

function workspaceFolderPath(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

function currentSettings(scope?: vscode.Uri): ServerSettings {
    return readSettings(vscode.workspace.getConfiguration('onnxlint', scope ?? vscode.workspace.workspaceFolders?.[0]));
}

export class Controller implements vscode.Disposable {
    private readonly output: vscode.LogOutputChannel;
    private readonly status: Status;
    private readonly disposables: { dispose(): unknown }[] = [];
    /** Fallbacks for server commands while no server offers them, so nothing fails silently. */
    private fallbacks: { dispose(): unknown }[] = [];
    private client: LanguageClient | undefined;
    private settings: ServerSettings;
    private interpreter: Interpreter | undefined;
    /** Why the server is not running, for the fallback commands. */
    private notRunningReason = 'the server has not started yet';
    private readonly restarts: Coalescer;
    /** Bumped on every restart, so an old install poll stops. */
    private generation = 0;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.output = vscode.window.createOutputChannel('onnxlint', { log: true });
        this.status = new Status();
        this.settings = currentSettings();
        this.restarts = new Coalescer(() => this.restartNow(), RESTART_DELAY_MS, undefined, (error) => {
            this.output.error(`restart failed: ${String(error)}`);
        });
        this.disposables.push(
            this.output,
            this.status,
            vscode.commands.registerCommand('onnxlint.restart', () => this.restarts.now()),
            vscode.commands.registerCommand('onnxlint.showLogs', () => {
                this.output.show();
            }),
            vscode.commands.registerCommand('onnxlint.selectInterpreter', () => this.selectInterpreter()),
            vscode.workspace.onDidChangeConfiguration((event) => {
                if (event.affectsConfiguration('onnxlint')) {
                    this.onSettingsChanged();
                }
            }),
            // Trust is sent at initialize; a newly trusted workspace needs a server that knows it.
            vscode.workspace.onDidGrantWorkspaceTrust(() => {
                void this.restarts.request();
            }),
        );
    }

    async start(): Promise<void> {
        const manifest = this.context.extension.packageJSON as { version?: string };
        this.output.info(`onnxlint extension ${manifest.version ?? '?'}`);
        const listener = await onDidChangeInterpreter(() => {
            if (this.settings.interpreter.length === 0) {
                this.output.info('The Python extension selected another interpreter; restarting.');
                void this.restarts.request();
            }
        });
        if (listener !== undefined) {
            this.disposables.push(listener);
        }
        await this.restarts.now();
    }

    private onSettingsChanged(): void {
        const before = this.settings;
        const after = currentSettings();
        this.settings = after;
        const change = classifyChange(before, after);
        this.output.info(`settings changed (${change})`);
        if (change === 'restart') {
            void this.restarts.request();
        } else if (change === 'notify' && this.client?.state === State.Running) {
            // The pushed shape other editors use; the server also pulls workspace/configuration.
            void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { onnxlint: after } });
        }
    }

    private async stopClient(): Promise<void> {
        this.disposeFallbacks();
        const client = this.client;
        this.client = undefined;
        if (client === undefined) {
            return;
        }
        try {
            if (client.state !== State.Stopped) {
                await client.stop(5_000);
            }
        } catch (error) {
            this.output.warn(`stopping the server: ${String(error)}`);
        }
        await client.dispose();
    }

    /** Stops the server if it runs, then starts it with the current settings. */
    private async restartNow(): Promise<void> {
        this.generation += 1;
        await this.stopClient();
        this.settings = currentSettings();
        const trusted = vscode.workspace.isTrusted;
        if (!this.settings.enable) {
            this.notRunningReason = 'onnxlint.enable is off';
            this.status.setState('disabled', 'Disabled by onnxlint.enable.');
            this.output.info('onnxlint.enable is off; the server is not started.');
            this.registerFallbacks([]);
            return;
        }
        this.status.setState('starting');
        const cwd = workspaceFolderPath();
        const interpreter = await resolveInterpreter({
            setting: this.settings.interpreter,
            pythonExtension: () => activeInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri),
            which: (name) => which(name),
            workspaceFolder: cwd,
            home: os.homedir(),
            env: process.env,
        });
        this.interpreter = interpreter;
        if (interpreter === undefined) {
            this.fail(
                'No Python interpreter found: set onnxlint.interpreter, select one in the Python extension, or put python3 on PATH.',
            );
            return;
        }
        this.output.info(`interpreter (${interpreter.source}): ${describe(interpreter)}`);
        const check = await runCheck(interpreter, cwd);
        if (!check.ok) {
            this.output.error(`onnxlint check failed in ${describe(interpreter)}:\n${check.error ?? ''}`);
            if (check.missingInterpreter === true) {
                this.fail(`The Python interpreter ${describe(interpreter)} could not be run.`);
            } else {
                this.notInstalled(interpreter);
            }
            return;
        }
        this.output.info(`onnxlint ${check.version ?? '?'} found in ${describe(interpreter)}`);

        const serverOptions: ServerOptions = {
            command: interpreter.command,
            args: serverArgs(interpreter, this.settings.args),
            // No `transport`: with TransportKind.stdio the client appends `--stdio`, which is not in the
            // contract (`-m onnxlint server` speaks stdio by default).
            options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
        };
        const clientOptions: LanguageClientOptions = {
            documentSelector: [
                { scheme: 'file', language: 'python' },
                { scheme: 'untitled', language: 'python' },
            ],
            outputChannel: this.output,
            traceOutputChannel: this.output,
            // The status item and notifications say when to look; the log never pops up by itself.
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: initializationOptions(this.settings, trusted),
            middleware: {
                executeCommand: (command, args, next) => this.executeCommand(command, args, next),
                workspace: {
                    // Answer for `onnxlint` with the same normalised object as initializationOptions.
                    configuration: async (params, token, next) => {
                        const answer: unknown = await next(params, token);
                        if (!Array.isArray(answer)) {
                            return answer as ReturnType<typeof next>;
                        }
                        const values = answer as unknown[];
                        return params.items.map((item, index): unknown =>
                            item.section === 'onnxlint'
                                ? readSettings(
                                      vscode.workspace.getConfiguration(
                                          'onnxlint',
                                          item.scopeUri !== undefined ? vscode.Uri.parse(item.scopeUri) : undefined,
                                      ),
                                  )
                                : values[index],
                        );
                    },
                },
            },
        };
        const client = new LanguageClient('onnxlint', 'onnxlint', serverOptions, clientOptions);
        this.client = client;
        client.onNotification('onnxlint/analysisState', (params: { state?: string; target?: string }) => {
            if (params.state === 'started' || params.state === 'finished') {
                this.status.analysis(params.state, params.target ?? '');
            }
        });
        client.onDidChangeState((event) => {
            if (this.client !== client) {
                return;
            }
            if (event.newState === State.Running) {
                this.status.setState('running', this.runningDetail(check.version), !trusted);
            } else if (event.newState === State.Stopped) {
                this.status.setState('error', 'The server stopped; see the logs.');
            }
        });
        try {
            await client.start();
        } catch (error) {
            this.output.error(`the server failed to start: ${String(error)}`);
            if (this.client === client) {
                this.fail(`The onnxlint server failed to start with ${describe(interpreter)}.`);
            }
            return;
        }
        const advertised = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
        this.notRunningReason = 'the server does not offer this command';
        this.registerFallbacks(advertised);
    }

    private runningDetail(version: string | undefined): string {
        const interpreter = this.interpreter !== undefined ? describe(this.interpreter) : '?';
        return `onnxlint ${version ?? '?'} in ${interpreter}`;
    }

    private async executeCommand(
        command: string,
        args: unknown[],
        next: (command: string, args: unknown[]) => unknown,
    ): Promise<unknown> {
        if (command === 'onnxlint.analyzeExport' && !vscode.workspace.isTrusted) {
            this.showTrustMessage();
            return undefined;
        }
        if (FILE_COMMANDS.has(command) && args.length === 0) {
            const editor = vscode.window.activeTextEditor;
            if (editor?.document.languageId !== 'python') {
                void vscode.window.showInformationMessage(`onnxlint: open a Python file to run this command.`);
                return undefined;
            }
            args = [editor.document.uri.toString()];
            if (command === 'onnxlint.analyzeExport') {
                const lensArgs = await this.pickAnalyzeLens(editor);
                if (lensArgs === null) {
                    return undefined; // the user dismissed the choice
                }
                args = lensArgs ?? args;
            }
        }
        this.output.info(`${command} ${JSON.stringify(args)}`);
        const result = await next(command, args);
        // The server explains failures itself (window/showMessage); the log keeps the outcome.
        this.output.info(`${command} -> ${result === undefined ? 'no result' : JSON.stringify(result)}`);
        return result;
    }

    /**
     * From the command palette, "Analyze export" runs what one of the file's "Analyze export" code
     * lenses would (they name the class, export call or target): the one lens, or the user's pick with
     * the one nearest above the cursor first. Undefined when the file has none (the server then says
     * why), null when the user dismissed the pick.
     */
    private async pickAnalyzeLens(editor: vscode.TextEditor): Promise<unknown[] | undefined | null> {
        const lenses =
            (await vscode.commands.executeCommand<vscode.CodeLens[] | undefined>(
                'vscode.executeCodeLensProvider',
                editor.document.uri,
            )) ?? [];
        const ours = lenses
            .filter((lens) => lens.command?.command === 'onnxlint.analyzeExport')
            .sort((a, b) => a.range.start.line - b.range.start.line);
        if (ours.length <= 1) {
            return ours[0]?.command?.arguments;
        }
        const cursor = editor.selection.active.line;
        const above = ours.filter((lens) => lens.range.start.line <= cursor + 1);
        const nearest = above[above.length - 1] ?? ours[0];
        const ordered = nearest === undefined ? ours : [nearest, ...ours.filter((lens) => lens !== nearest)];
        const choice = await vscode.window.showQuickPick(
            ordered.map((lens) => ({
                label: lens.command?.title ?? 'Analyze export',
                description: `line ${lens.range.start.line + 1}: ${editor.document.lineAt(lens.range.start.line).text.trim()}`,
                lens,
            })),
            { title: 'onnxlint: analyze the export of...' },
        );
        return choice === undefined ? null : choice.lens.command?.arguments;
    }

    private showTrustMessage(): void {
        void vscode.window.showWarningMessage(TRUST_MESSAGE, 'Manage Workspace Trust').then((choice) => {
            if (choice !== undefined) {
                void vscode.commands.executeCommand('workbench.trust.manage');
            }
        });
    }

    private registerFallbacks(advertised: readonly string[]): void {
        this.disposeFallbacks();
        for (const command of SERVER_COMMANDS) {
            if (advertised.includes(command)) {
                continue;
            }
            this.fallbacks.push(
                vscode.commands.registerCommand(command, () => {
                    if (command === 'onnxlint.analyzeExport' && !vscode.workspace.isTrusted) {
                        this.showTrustMessage();
                        return;
                    }
                    void vscode.window
                        .showErrorMessage(`onnxlint: cannot run ${command}: ${this.notRunningReason}.`, 'Show logs')
                        .then((choice) => {
                            if (choice !== undefined) {
                                this.output.show();
                            }
                        });
                }),
            );
        }
    }

    private disposeFallbacks(): void {
        for (const d of this.fallbacks) {
            d.dispose();
        }
        this.fallbacks = [];
    }

    private fail(message: string): void {
        this.notRunningReason = message;
        this.status.setState('error', message);
        this.registerFallbacks([]);
        void vscode.window.showErrorMessage(message, 'Select Interpreter', 'Show logs').then((choice) => {
            if (choice === 'Select Interpreter') {
                void this.selectInterpreter();
            } else if (choice === 'Show logs') {
                this.output.show();
            }
        });
    }

    private notInstalled(interpreter: Interpreter): void {
        const message = `onnxlint is not installed in ${describe(interpreter)}`;
        this.notRunningReason = message;
        this.status.setState('error', message);
        this.registerFallbacks([]);
        void vscode.window.showErrorMessage(message, 'Install', 'Select Interpreter').then((choice) => {
            if (choice === 'Install') {
                this.install(interpreter);
            } else if (choice === 'Select Interpreter') {
                void this.selectInterpreter();
            }
        });
    }

    /** Runs pip in a terminal (so the user sees the command and its output), then restarts once it worked. */
    private install(interpreter: Interpreter): void {
        const line = installCommandLine(interpreter);
        this.output.info(`installing: ${line}`);
        const terminal = vscode.window.createTerminal({ name: 'onnxlint: install', cwd: workspaceFolderPath() });
        terminal.show();
        terminal.sendText(line);
        const generation = this.generation;
        const started = Date.now();
        const poll = async (): Promise<void> => {
            if (generation !== this.generation || Date.now() - started > INSTALL_POLL_LIMIT_MS) {
                return;
            }
            const check = await runCheck(interpreter, workspaceFolderPath());
            if (check.ok) {
                this.output.info(`onnxlint ${check.version ?? '?'} is now installed; starting the server.`);
                void this.restarts.request();
                return;
            }
            setTimeout(() => void poll(), INSTALL_POLL_MS);
        };
        setTimeout(() => void poll(), INSTALL_POLL_MS);
    }

    private async selectInterpreter(): Promise<void> {
        type Choice = vscode.QuickPickItem & { action: 'python' | 'browse' | 'enter' | 'clear' };
        const items: Choice[] = [];
        if (pythonExtensionInstalled()) {
            items.push({
                label: "$(symbol-namespace) Use the Python extension's interpreter",
                description: 'python.setInterpreter',
                action: 'python',
            });
        }
        items.push(
            { label: '$(folder-opened) Browse...', action: 'browse' },
            { label: '$(edit) Enter a path or command...', action: 'enter' },
        );
        if (this.settings.interpreter.length > 0) {
            items.push({
                label: '$(clear-all) Clear onnxlint.interpreter',
                description: this.settings.interpreter.join(' '),
                action: 'clear',
            });
        }
        const current = this.interpreter !== undefined ? describe(this.interpreter) : 'none';
        const choice = await vscode.window.showQuickPick(items, {
            title: 'onnxlint: Python interpreter to run the server',
            placeHolder: `Current: ${current}`,
        });
        if (choice === undefined) {
            return;
        }
        let value: string[] | undefined;
        switch (choice.action) {
            case 'python':
                await this.writeInterpreter([]);
                await vscode.commands.executeCommand('python.setInterpreter');
                return;
            case 'clear':
                value = [];
                break;
            case 'browse': {
                const picked = await vscode.window.showOpenDialog({
                    canSelectMany: false,
                    openLabel: 'Use this interpreter',
                    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
                });
                value = picked?.[0] !== undefined ? [picked[0].fsPath] : undefined;
                break;
            }
            case 'enter': {
                const typed = await vscode.window.showInputBox({
                    title: 'onnxlint: Python interpreter',
                    prompt: 'Path to python, e.g. ~/venvs/ml/bin/python (a command with arguments is split on spaces)',
                    value: this.settings.interpreter.join(' '),
                });
                value = typed?.trim().split(/\s+/).filter((part) => part !== '');
                break;
            }
        }
        if (value !== undefined) {
            await this.writeInterpreter(value);
        }
    }

    private async writeInterpreter(value: string[]): Promise<void> {
        // An untrusted workspace cannot set a restricted setting, so it goes to the user settings.
        const target =
            vscode.workspace.isTrusted && vscode.workspace.workspaceFolders !== undefined
                ? vscode.ConfigurationTarget.Workspace
                : vscode.ConfigurationTarget.Global;
        await vscode.workspace.getConfiguration('onnxlint').update('interpreter', value, target);
        // The configuration listener restarts the server.
    }

    async stop(): Promise<void> {
        this.restarts.dispose();
        this.generation += 1;
        await this.stopClient();
    }

    dispose(): void {
        void this.stop();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
