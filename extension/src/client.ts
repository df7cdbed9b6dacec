// Owns the language client: finds the interpreter, checks onnxlint is there, starts and restarts the server.
import { type ChildProcess, execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as readline from 'node:readline';
import type { Readable } from 'node:stream';
import * as vscode from 'vscode';
import {
    CloseAction,
    DidChangeConfigurationNotification,
    ErrorAction,
    LanguageClient,
    type LanguageClientOptions,
    RevealOutputChannelOn,
    type ServerOptions,
    State,
} from 'vscode-languageclient/node';
import { Coalescer } from './coalesce';
import { splitArgs, joinArgs } from './args';
import { OPEN_LOCATION, SET_ARGUMENTS, SHOW_ANALYSIS_RESULT, TRUST_MESSAGE } from './commands';
import { linkLocations } from './reportlinks';
import { bundledTool, type EarlyServer, launch, launchOf, sameLaunch, type ServerLaunch } from './early';
import {
    type CheckOutcome,
    checkArgs,
    describe,
    installCommandLine,
    type Interpreter,
    parseCheck,
    resolveInterpreter,
    which,
} from './interpreter';
import { handleServerProgress } from './progress';
import { activeInterpreter, onDidChangeInterpreter, pythonExtensionInstalled } from './python';
import { type Level, serverLogLine } from './serverlog';
import { classifyChange, initializationOptions, readSettings, type ServerSettings } from './settings';
import { Status } from './status';
import { TraceChannel } from './trace';

/** Server commands that act on a file: from the command palette they get the active editor's URI. */
const FILE_COMMANDS: ReadonlySet<string> = new Set(['onnxlint.analyzeExport', 'onnxlint.fixAll']);
/** Palette commands that get a fallback (an explanation) while no server offers them. */
const FALLBACK_COMMANDS = ['onnxlint.analyzeExport', 'onnxlint.fixAll', 'onnxlint.showReport'] as const;
/** A running server that stops this many times within RESTART_WINDOW_MS is not restarted again. */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 3 * 60_000;

const RESTART_DELAY_MS = 300;
const CHECK_TIMEOUT_MS = 30_000;

function runCheck(interpreter: Interpreter, cwd: string | undefined): Promise<CheckOutcome> {
    return new Promise((resolve) => {
        execFile(
            interpreter.command,
            checkArgs(interpreter),
            { cwd, timeout: CHECK_TIMEOUT_MS, windowsHide: true },
            (error, stdout, stderr) => {
                const code = (error as NodeJS.ErrnoException | null)?.code;
                const spawnError = code === 'ENOENT' || code === 'EACCES' ? String(error?.message) : undefined;
                resolve(parseCheck(stdout, stderr, spawnError));
            },
        );
    });
}

/** Python's stderr lines into the output channel at their own level (not all as errors). */
function pipeServerStderr(input: Readable, output: vscode.LogOutputChannel): void {
    let previous: Level | undefined;
    readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line: string) => {
        const record = serverLogLine(line, previous);
        previous = record.level;
        output[record.level](record.text);
    });
}

/**
 * vscode-languageclient, minus its own "couldn't create connection to server" notification: a
 * server that fails to start is explained by the extension (the interpreter check says what is
 * missing), in one notification with the actions that fix it.
 */
class OnnxlintClient extends LanguageClient {
    override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
        super.error(message, data, showNotification === 'force' ? false : showNotification);
    }
}

/** The answer of the server's `onnxlint.createTarget`. */
interface CreatedTarget {
    created?: string | null;
    placeholders?: string[];
    rerun?: Record<string, unknown>;
}

/** A script run that stopped for its command line: what "Set arguments..." needs. */
interface ScriptStop {
    uri?: string;
    script: string;
    argv: string[];
    rerun: Record<string, unknown>;
}

/** The `onnxlint/analysisState` notification; `finished` carries the counts and one sentence. */
interface AnalysisState {
    state?: string;
    target?: string;
    status?: string;
    findings?: number;
    errors?: number;
    message?: string;
    setArguments?: ScriptStop;
}

/** Milliseconds since the window's extension host started this extension, for the timing log. */
class Timing {
    private readonly marks: Record<string, number> = {};

    constructor(private readonly output: vscode.LogOutputChannel) {}

    mark(name: string, at = Date.now()): void {
        this.marks[name] ??= at;
    }

    /** Logs the start-up breakdown once, when the first diagnostics arrive. */
    report(): void {
        const m = this.marks;
        if (m.reported !== undefined || m.activated === undefined) {
            return;
        }
        this.mark('reported');
        const span = (from: string, to: string): string =>
            m[from] !== undefined && m[to] !== undefined ? `${m[to] - m[from]} ms` : '?';
        this.output.info(
            `timing: client loaded and interpreter resolved ${span('activated', 'interpreter')}, server initialized ` +
                `${span('interpreter', 'initialized')}, first diagnostics ${span('initialized', 'diagnostics')}; ` +
                `${span('activated', 'diagnostics')} from activation`,
        );
        this.output.info(`timing-json ${JSON.stringify(m)}`);
    }
}

function workspaceFolderPath(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

function currentSettings(scope?: vscode.Uri): ServerSettings {
    return readSettings(vscode.workspace.getConfiguration('onnxlint', scope ?? vscode.workspace.workspaceFolders?.[0]));
}

export class Controller implements vscode.Disposable {
    private readonly output: vscode.LogOutputChannel;
    private readonly traceChannel: TraceChannel;
    private readonly status: Status;
    private readonly disposables: { dispose(): unknown }[] = [];
    /** Fallbacks for server commands while no server offers them, so nothing fails silently. */
    private fallbacks: { dispose(): unknown }[] = [];
    /** What the running client registered besides itself (the progress handler). */
    private clientDisposables: { dispose(): unknown }[] = [];
    private client: LanguageClient | undefined;
    /** The server process of the running client. */
    private serverProcess: ChildProcess | undefined;
    private settings: ServerSettings;
    private interpreter: Interpreter | undefined;
    /** Why the server is not running, for the fallback commands. */
    private notRunningReason = 'the server has not started yet';
    private readonly restarts: Coalescer;
    /** Bumped on every restart, so an old install or a stopped client's handlers do nothing. */
    private generation = 0;
    private readonly timing: Timing;
    /** The end of the latest deep analysis, for onnxlint.showAnalysisResult. */
    private lastAnalysis: AnalysisState | undefined;

    constructor(
        private readonly context: vscode.ExtensionContext,
        activated = Date.now(),
        loaded = activated,
        private early?: EarlyServer,
    ) {
        this.output = vscode.window.createOutputChannel('onnxlint', { log: true });
        this.timing = new Timing(this.output);
        this.timing.mark('loaded', loaded);
        this.timing.mark('activated', activated);
        this.status = new Status();
        this.settings = currentSettings();
        this.traceChannel = new TraceChannel(this.output, this.settings.trace.server);
        this.restarts = new Coalescer(() => this.restartNow(), RESTART_DELAY_MS, undefined, (error) => {
            this.output.error(`restart failed: ${String(error)}`);
        });
        this.disposables.push(
            this.output,
            this.traceChannel,
            this.status,
            vscode.commands.registerCommand('onnxlint.restart', () => this.restarts.now()),
            vscode.commands.registerCommand('onnxlint.showLogs', () => {
                this.output.show();
            }),
            vscode.commands.registerCommand('onnxlint.selectInterpreter', () => this.selectInterpreter()),
            vscode.commands.registerCommand(SET_ARGUMENTS, (uri: unknown, stop: unknown) => this.setArguments(uri, stop)),
            vscode.commands.registerCommand(OPEN_LOCATION, (file: unknown, line: unknown) => openLocation(file, line)),
            vscode.commands.registerCommand(SHOW_ANALYSIS_RESULT, () => {
                if (this.lastAnalysis !== undefined) {
                    this.showAnalysisResult(this.lastAnalysis);
                }
            }),
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
        // The server starts first: waiting for the Python extension to activate (only to hear of a
        // later interpreter change) would delay the first diagnostics.
        const started = this.restarts.now();
        const listener = await onDidChangeInterpreter(() => {
            if (this.settings.interpreter.length === 0) {
                this.output.info('The Python extension selected another interpreter; restarting.');
                void this.restarts.request();
            }
        });
        if (listener !== undefined) {
            this.disposables.push(listener);
        }
        await started;
    }

    private onSettingsChanged(): void {
        const before = this.settings;
        const after = currentSettings();
        this.settings = after;
        this.traceChannel.setTrace(after.trace.server);
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
        for (const d of this.clientDisposables) {
            d.dispose();
        }
        this.clientDisposables = [];
        const client = this.client;
        this.client = undefined;
        if (client === undefined) {
            return;
        }
        // After a failed start the client is in no state to stop (vscode-languageclient throws
        // "Client is not running and can't be stopped"): that must not abort the restart.
        try {
            if (client.state === State.Running) {
                await client.stop(5_000);
            }
        } catch (error) {
            this.output.warn(`stopping the server: ${String(error)}`);
        }
        try {
            await client.dispose(2_000);
        } catch (error) {
            this.output.debug(`disposing the stopped client: ${String(error)}`);
        }
        // The process is ours (the client got it from a function): a server that did not exit
        // on `exit` is stopped here.
        const server = this.serverProcess;
        this.serverProcess = undefined;
        if (server?.exitCode === null && server.signalCode === null) {
            server.kill();
        }
    }

    /** The process started at activation, if it runs the same command as this start would. */
    private takeEarly(spec: ServerLaunch): ChildProcess | undefined {
        const early = this.early;
        this.early = undefined;
        if (early === undefined) {
            return undefined;
        }
        const alive = early.process.exitCode === null && early.process.signalCode === null;
        if (alive && sameLaunch(early.launch, spec)) {
            this.output.info(`using the server process started at activation (${early.what})`);
            return early.process;
        }
        early.process.kill();
        return undefined;
    }

    /** Stops the server if it runs, then starts it with the current settings. */
    private async restartNow(): Promise<void> {
        this.generation += 1;
        const generation = this.generation;
        await this.stopClient();
        this.settings = currentSettings();
        this.traceChannel.setTrace(this.settings.trace.server);
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
        this.timing.mark('interpreter');
        this.interpreter = interpreter;
        if (interpreter === undefined) {
            this.fail(
                'No Python interpreter found: set onnxlint.interpreter, select one in the Python extension, or put python3 on PATH.',
            );
            return;
        }
        this.output.info(`interpreter (${interpreter.source}): ${describe(interpreter)}`);

        // No separate install check before the start (it cost a Python start-up of its own on the way
        // to the first diagnostics): the check runs only when the server fails, to say why.
        // `-m onnxlint server` speaks stdio (no `--stdio`, which vscode-languageclient's
        // TransportKind.stdio would append). The process is started here (or was at activation,
        // early.ts) and handed to the client; a restart after a crash starts a new one.
        const spec = launchOf(interpreter, this.settings.args, cwd, bundledTool(this.context.extensionPath), this.settings.importStrategy);
        let first = this.takeEarly(spec);
        const serverOptions: ServerOptions = () => {
            const child = first ?? launch(spec);
            first = undefined;
            this.serverProcess = child;
            return Promise.resolve(child);
        };
        let running = false;
        const stops: number[] = [];
        const clientOptions: LanguageClientOptions = {
            documentSelector: [
                { scheme: 'file', language: 'python' },
                { scheme: 'untitled', language: 'python' },
                // The Python cells of Jupyter notebooks; the server syncs the notebooks themselves
                // (LSP 3.17 notebook sync) and checks each notebook as one module.
                { notebook: 'jupyter-notebook', language: 'python' },
            ],
            outputChannel: this.output,
            traceOutputChannel: this.traceChannel,
            stdioOptions: {
                stdout: (input, output) => {
                    readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line: string) => {
                        output.info(line);
                    });
                },
                stderr: pipeServerStderr,
            },
            // The status item and notifications say when to look; the log never pops up by itself.
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: initializationOptions(this.settings, trusted),
            // A server that cannot start is not restarted in a loop: the check says why it failed. One
            // that crashes after running is restarted a few times, then explained the same way.
            initializationFailedHandler: () => false,
            errorHandler: {
                error: () => ({ action: ErrorAction.Continue, handled: true }),
                closed: () => {
                    const now = Date.now();
                    stops.push(now);
                    const recent = stops.filter((t) => now - t < RESTART_WINDOW_MS).length;
                    if (running && recent <= MAX_RESTARTS) {
                        this.output.warn(`the server stopped; restarting it (${recent}/${MAX_RESTARTS})`);
                        return { action: CloseAction.Restart, handled: true };
                    }
                    if (running && generation === this.generation) {
                        void this.explainFailure(interpreter, cwd, 'The onnxlint server keeps stopping');
                    }
                    return { action: CloseAction.DoNotRestart, handled: true };
                },
            },
            middleware: {
                executeCommand: (command, args, next) => this.executeCommand(command, args, next),
                // First diagnostics, pushed or (VS Code's way) pulled: the end of the start-up timing.
                handleDiagnostics: (uri, diagnostics, next) => {
                    next(uri, diagnostics);
                    this.firstDiagnostics();
                },
                provideDiagnostics: async (document, previousResultId, token, next) => {
                    const report = await next(document, previousResultId, token);
                    this.firstDiagnostics();
                    return report;
                },
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
        const client = new OnnxlintClient('onnxlint', 'onnxlint', serverOptions, clientOptions);
        this.client = client;
        client.onNotification('onnxlint/analysisState', (params: AnalysisState) => {
            if (this.client !== client) {
                return;
            }
            if (params.state === 'worker') {
                // The deep worker's start in the background (the start-up bench waits for "ready").
                this.output.info(`deep worker ${params.status ?? '?'} ${JSON.stringify(params)}`);
            } else if (params.state === 'started') {
                this.status.setAnalysis(typeof params.target === 'string' ? `analyzing ${params.target}` : 'analyzing');
            } else if (params.state === 'finished') {
                this.status.setAnalysis(undefined);
                this.lastAnalysis = params;
                this.showAnalysisResult(params);
            }
        });
        client.onDidChangeState((event) => {
            if (this.client !== client) {
                return;
            }
            if (event.newState === State.Running) {
                running = true;
                this.status.setState('running', this.runningDetail(client), !trusted);
            } else if (event.newState === State.Stopped && running) {
                this.status.setState('error', 'The server stopped; see the logs.');
            }
        });
        try {
            await client.start();
        } catch (error) {
            this.output.error(`the server failed to start: ${String(error)}`);
            if (this.client === client) {
                await this.explainFailure(interpreter, cwd, 'The onnxlint server failed to start');
            }
            return;
        }
        this.timing.mark('initialized');
        this.clientDisposables.push(handleServerProgress(client));
        const version = client.initializeResult?.serverInfo?.version ?? '?';
        this.output.info(`onnxlint ${version} running in ${describe(interpreter)}`);
        const advertised = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
        this.notRunningReason = 'the server does not offer this command';
        this.registerFallbacks(advertised);
    }

    /** After the server failed: the interpreter check says what is missing, in a notification. */
    private async explainFailure(interpreter: Interpreter, cwd: string | undefined, what: string): Promise<void> {
        const check = await runCheck(interpreter, cwd);
        this.output.info(`interpreter check of ${describe(interpreter)}: ${JSON.stringify(check)}`);
        switch (check.kind) {
            case 'not-python':
                this.fail(`The Python interpreter ${describe(interpreter)} could not be run: ${check.reason}`);
                return;
            case 'not-installed':
                this.notInstalled(interpreter, `onnxlint is not installed in ${describe(interpreter)}`);
                return;
            case 'partial':
                this.notInstalled(
                    interpreter,
                    `onnxlint is installed in ${describe(interpreter)}, but the server needs ` +
                        `${check.missing.join(', ')}, which ${check.missing.length === 1 ? 'is' : 'are'} missing`,
                );
                return;
            default:
                this.fail(`${what} with ${describe(interpreter)} (onnxlint ${check.version} is installed); see the logs.`);
        }
    }

    private firstDiagnostics(): void {
        this.timing.mark('diagnostics');
        this.timing.report();
    }

    private showAnalysisResult(state: AnalysisState): void {
        const message = state.message ?? `onnxlint: ${state.target ?? '?'}: ${state.status ?? 'finished'}`;
        if (state.status === 'cancelled' || state.status === 'error') {
            void vscode.window.showInformationMessage(message);
            return;
        }
        const show = (state.errors ?? 0) > 0 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
        const stop = state.setArguments;
        const actions = stop !== undefined ? ['Set arguments...', 'Show report'] : ['Show report'];
        void show(message, ...actions).then((choice) => {
            if (choice === 'Show report') {
                void vscode.commands.executeCommand('onnxlint.showReport');
            } else if (choice === 'Set arguments...' && stop !== undefined) {
                void this.setArguments(stop.uri, stop);
            }
        });
    }

    /**
     * "Set arguments...": an input box with the script's command line; the server writes it as the
     * `argv` of the script's `[[tool.onnxlint.scripts]]` entry in pyproject.toml, then the same
     * analysis runs again.
     */
    private async setArguments(uri: unknown, stop: unknown): Promise<void> {
        const found = stop as Partial<ScriptStop> | undefined;
        if (typeof uri !== 'string' || typeof found?.script !== 'string') {
            return;
        }
        const name = found.script.split(/[\\/]/).pop() ?? found.script;
        const typed = await vscode.window.showInputBox({
            title: `onnxlint: the command line ${name} runs with in the deep analysis`,
            prompt: `What you would type after "python ${name}" (written to [[tool.onnxlint.scripts]] in pyproject.toml)`,
            value: joinArgs(found.argv ?? []),
            validateInput: (text) => {
                try {
                    splitArgs(text);
                    return undefined;
                } catch (error) {
                    return String(error instanceof Error ? error.message : error);
                }
            },
        });
        if (typed === undefined) {
            return;
        }
        const argv = splitArgs(typed);
        const written = await vscode.commands.executeCommand<{ written?: string | null } | undefined>('onnxlint.setScriptArguments', uri, {
            script: found.script,
            argv,
        });
        this.output.info(`set arguments of ${found.script}: ${JSON.stringify(argv)} -> ${JSON.stringify(written)}`);
        if (typeof written?.written === 'string' && found.rerun !== undefined) {
            await vscode.commands.executeCommand('onnxlint.analyzeExport', uri, found.rerun);
        }
    }

    /** Opens the HTML report of the latest analyses in a webview (it has no scripts and fetches nothing). */
    private showReport(paths: { html?: unknown; markdown?: unknown }): void {
        if (typeof paths.html !== 'string') {
            return;
        }
        const panel = vscode.window.createWebviewPanel(
            'onnxlint.report',
            'onnxlint report',
            vscode.ViewColumn.Beside,
            // No scripts; its links to findings' places run one command, which opens the file there.
            { enableScripts: false, enableFindWidget: true, enableCommandUris: [OPEN_LOCATION] },
        );
        panel.webview.html = linkLocations(fs.readFileSync(paths.html, 'utf8'));
    }

    private runningDetail(client: LanguageClient): string {
        const interpreter = this.interpreter !== undefined ? describe(this.interpreter) : '?';
        const info = client.initializeResult?.serverInfo;
        const bundled = info?.name.includes('bundled') === true ? ' (bundled with the extension)' : '';
        return `onnxlint ${info?.version ?? '?'}${bundled} in ${interpreter}`;
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
        if (command === 'onnxlint.showReport') {
            const paths = (await next(command, [{ show: false }])) as { html?: unknown } | null | undefined;
            this.output.info(`${command} -> ${JSON.stringify(paths)}`);
            if (paths !== undefined && paths !== null) {
                this.showReport(paths);
            }
            return paths;
        }
        this.output.info(`${command} ${JSON.stringify(args)}`);
        const result = await next(command, args);
        // The server explains failures itself (window/showMessage); the log keeps the outcome.
        this.output.info(`${command} -> ${result === undefined ? 'no result' : JSON.stringify(result)}`);
        if (command === 'onnxlint.createTarget' && typeof args[0] === 'string') {
            await this.afterCreateTarget(args[0], result as CreatedTarget | undefined);
        }
        return result;
    }

    /**
     * "Create a target" appended a factory to the file: save it (the worker imports the file from
     * disk), then run it when it has nothing left to fill in; else say what to fill in (the server
     * selected the first placeholder).
     */
    private async afterCreateTarget(uri: string, created: CreatedTarget | undefined): Promise<void> {
        if (typeof created?.created !== 'string') {
            return;
        }
        const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
        const saved = document !== undefined ? await document.save() : false;
        this.output.info(`created target ${created.created}: saved ${saved}`);
        const left = created.placeholders ?? [];
        if (left.length > 0) {
            const names = left.map((p) => (p.startsWith('the ') ? p : `\`${p}\``)).join(', ');
            void vscode.window.showInformationMessage(
                `onnxlint: fill in ${names} in ${created.created}() (marked "onnxlint: fill in"), save, then run its lens.`,
            );
            return;
        }
        if (saved && created.rerun !== undefined) {
            await vscode.commands.executeCommand('onnxlint.analyzeExport', uri, created.rerun);
        }
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
        for (const command of FALLBACK_COMMANDS) {
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

    private notInstalled(interpreter: Interpreter, message: string): void {
        this.notRunningReason = message;
        this.status.setState('error', message);
        this.registerFallbacks([]);
        void vscode.window.showErrorMessage(message, 'Install', 'Select Interpreter').then((choice) => {
            if (choice === 'Install') {
                void this.install(interpreter);
            } else if (choice === 'Select Interpreter') {
                void this.selectInterpreter();
            }
        });
    }

    /**
     * Runs pip as a task (its terminal shows the command and its output); restarts the server when it
     * worked, and says so when it failed.
     */
    private async install(interpreter: Interpreter): Promise<void> {
        const line = installCommandLine(interpreter);
        this.output.info(`installing: ${line}`);
        const generation = this.generation;
        const task = new vscode.Task(
            { type: 'onnxlint', action: 'install' },
            vscode.workspace.workspaceFolders?.[0] ?? vscode.TaskScope.Workspace,
            'install onnxlint',
            'onnxlint',
            new vscode.ShellExecution(line, { cwd: workspaceFolderPath() }),
        );
        task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, focus: false, clear: true };
        let execution: vscode.TaskExecution;
        try {
            execution = await vscode.tasks.executeTask(task);
        } catch (error) {
            this.installFailed(interpreter, `it could not be run (${String(error)})`);
            return;
        }
        const ended = vscode.tasks.onDidEndTaskProcess((event) => {
            if (event.execution !== execution) {
                return;
            }
            ended.dispose();
            this.output.info(`install exited with code ${String(event.exitCode)}`);
            if (generation !== this.generation) {
                return;
            }
            if (event.exitCode === 0) {
                void vscode.window.showInformationMessage(`onnxlint was installed in ${describe(interpreter)}; starting the server.`);
                void this.restarts.request();
            } else {
                this.installFailed(interpreter, `pip exited with code ${String(event.exitCode)}; see the terminal`);
            }
        });
        this.disposables.push(ended);
    }

    private installFailed(interpreter: Interpreter, why: string): void {
        const message = `Installing onnxlint in ${describe(interpreter)} failed: ${why}.`;
        this.output.error(message);
        void vscode.window.showErrorMessage(message, 'Select Interpreter', 'Show logs').then((choice) => {
            if (choice === 'Select Interpreter') {
                void this.selectInterpreter();
            } else if (choice === 'Show logs') {
                this.output.show();
            }
        });
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
        this.early?.process.kill();
        this.early = undefined;
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

/** The report's link to a finding's place: the file, opened in the first column at that line. */
async function openLocation(file: unknown, line: unknown): Promise<void> {
    if (typeof file !== 'string') {
        return;
    }
    const at = typeof line === 'number' && line > 0 ? line - 1 : 0;
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
    const position = new vscode.Position(at, 0);
    await vscode.window.showTextDocument(document, {
        viewColumn: vscode.ViewColumn.One,
        selection: new vscode.Range(position, position),
    });
}
