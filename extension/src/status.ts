// The server's state as ONE language status item (the `{}` next to the language mode, as ruff's and
// the Python tools'): shown for Python files and notebook cells only (its selector), kept while the
// logs or another panel has the focus, busy with the name of the target while a deep analysis
// runs, and raised into the status bar by VS Code itself when it is an error. No separate status
// bar item: it said the same thing a second time (issue 27).
import * as vscode from 'vscode';
import { languageStatus, type ServerState } from './langstatus';

export type { ServerState } from './langstatus';

/** Where the language status item shows: Python files and notebook cells. */
export const LANGUAGE_SELECTOR: vscode.DocumentSelector = [
    { language: 'python' },
    { notebookType: 'jupyter-notebook', language: 'python' },
];

export class Status implements vscode.Disposable {
    private readonly language: vscode.LanguageStatusItem;
    private state: ServerState = 'stopped';
    private detail = '';
    private restricted = false;
    private analysing: string | undefined;

    constructor() {
        this.language = vscode.languages.createLanguageStatusItem('onnxlint.language', LANGUAGE_SELECTOR);
        this.language.name = 'onnxlint';
        this.language.command = { title: 'Show logs', command: 'onnxlint.showLogs' };
        this.render();
    }

    setState(state: ServerState, detail = '', restricted = false): void {
        this.state = state;
        this.detail = detail;
        this.restricted = restricted;
        if (state !== 'running') {
            this.analysing = undefined;
        }
        this.render();
    }

    /** A deep analysis of `target` started (undefined: it ended). */
    setAnalysis(target: string | undefined): void {
        this.analysing = target;
        this.render();
    }

    private render(): void {
        const shown = languageStatus(this.state, this.detail, this.restricted, this.analysing);
        this.language.text = shown.text;
        this.language.detail = shown.detail;
        this.language.busy = shown.busy;
        this.language.severity = shown.error ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
    }

    dispose(): void {
        this.language.dispose();
    }
}
