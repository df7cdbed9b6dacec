// `onnxlint.trace.server` for vscode-languageclient 11, which traces the LSP messages only while the
// trace channel's log level is Trace (and then reads `trace.server` only for messages vs verbose).
// This channel reports level Trace while the setting is on, and writes the trace into the onnxlint
// output channel at the level it shows by default, so the setting alone works as documented.
import * as vscode from 'vscode';
import type { TraceLevel } from './settings';

export class TraceChannel implements vscode.LogOutputChannel {
    private readonly changed = new vscode.EventEmitter<vscode.LogLevel>();
    readonly onDidChangeLogLevel = this.changed.event;

    constructor(
        private readonly output: vscode.LogOutputChannel,
        private level: TraceLevel,
    ) {}

    get name(): string {
        return this.output.name;
    }

    get logLevel(): vscode.LogLevel {
        return this.level === 'off' ? this.output.logLevel : vscode.LogLevel.Trace;
    }

    /** Called when the setting changes: vscode-languageclient re-reads the level and the setting. */
    setTrace(level: TraceLevel): void {
        if (level !== this.level) {
            this.level = level;
            this.changed.fire(this.logLevel);
        }
    }

    trace(message: string, ...args: unknown[]): void {
        if (this.level === 'off') {
            this.output.trace(message, ...args);
        } else {
            this.output.info(`[trace] ${message}`, ...args);
        }
    }

    debug(message: string, ...args: unknown[]): void {
        this.output.debug(message, ...args);
    }

    info(message: string, ...args: unknown[]): void {
        this.output.info(message, ...args);
    }

    warn(message: string, ...args: unknown[]): void {
        this.output.warn(message, ...args);
    }

    error(error: string | Error, ...args: unknown[]): void {
        this.output.error(error, ...args);
    }

    append(value: string): void {
        this.output.append(value);
    }

    appendLine(value: string): void {
        this.output.appendLine(value);
    }

    replace(value: string): void {
        this.output.replace(value);
    }

    clear(): void {
        this.output.clear();
    }

    show(columnOrPreserveFocus?: vscode.ViewColumn | boolean, preserveFocus?: boolean): void {
        this.output.show(typeof columnOrPreserveFocus === 'boolean' ? columnOrPreserveFocus : preserveFocus);
    }

    hide(): void {
        this.output.hide();
    }

    dispose(): void {
        this.changed.dispose();
    }
}
