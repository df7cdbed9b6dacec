// The status bar item: the server's state, shown while a Python file or a notebook is in front
// (not over Markdown, settings or extension pages), like the Python tools' items. A deep analysis
// shows its own progress notification, so the item does not repeat it.
//
// The language status item (the `{}` next to the language mode, as ruff's and the Python tools'):
// the same state, kept while the logs or another panel has the focus, and busy with the name of the
// target while a deep analysis runs.
import * as vscode from 'vscode';
import { languageStatus, type ServerState } from './langstatus';

export type { ServerState } from './langstatus';

/** Whether the status item belongs to the editor in front. */
export function showsFor(editor: { languageId?: string; scheme?: string; notebook?: boolean } | undefined): boolean {
    if (editor === undefined) {
        return false;
    }
    return editor.notebook === true || editor.languageId === 'python' || editor.scheme === 'vscode-notebook-cell';
}

/** Where the language status item shows: Python files and notebook cells. */
export const LANGUAGE_SELECTOR: vscode.DocumentSelector = [
    { language: 'python' },
    { notebookType: 'jupyter-notebook', language: 'python' },
];

export class Status implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private readonly language: vscode.LanguageStatusItem;
    private state: ServerState = 'stopped';
    private detail = '';
    private restricted = false;
    private analysing: string | undefined;
    private readonly listeners: vscode.Disposable[];

    constructor() {
        this.item = vscode.window.createStatusBarItem('onnxlint.status', vscode.StatusBarAlignment.Right, 100);
        this.item.name = 'onnxlint';
        this.item.command = 'onnxlint.showLogs';
        this.language = vscode.languages.createLanguageStatusItem('onnxlint.language', LANGUAGE_SELECTOR);
        this.language.name = 'onnxlint';
        this.language.command = { title: 'Show logs', command: 'onnxlint.showLogs' };
        this.render();
        this.listeners = [
            vscode.window.onDidChangeActiveTextEditor(() => {
                this.updateVisibility();
            }),
            vscode.window.onDidChangeActiveNotebookEditor(() => {
                this.updateVisibility();
            }),
        ];
        this.updateVisibility();
    }

    private updateVisibility(): void {
        const notebook = vscode.window.activeNotebookEditor !== undefined;
        const document = vscode.window.activeTextEditor?.document;
        const visible = showsFor(
            notebook ? { notebook } : document && { languageId: document.languageId, scheme: document.uri.scheme },
        );
        if (visible) {
            this.item.show();
        } else {
            this.item.hide();
        }
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
        let text: string;
        let background: vscode.ThemeColor | undefined;
        switch (this.state) {
            case 'starting':
                text = '$(loading~spin) onnxlint';
                break;
            case 'running':
                text = `$(check) onnxlint${this.restricted ? ' (restricted)' : ''}`;
                break;
            case 'disabled':
                text = '$(circle-slash) onnxlint';
                break;
            case 'error':
                text = '$(error) onnxlint';
                background = new vscode.ThemeColor('statusBarItem.errorBackground');
                break;
            default:
                text = '$(debug-stop) onnxlint';
        }
        this.item.text = text;
        this.item.backgroundColor = background;
        const lines = [`onnxlint server: ${this.state}`];
        if (this.detail !== '') {
            lines.push(this.detail);
        }
        if (this.restricted) {
            lines.push('Restricted mode: static checks only; trust the workspace to run deep analysis.');
        }
        lines.push('Click to show the logs.');
        this.item.tooltip = lines.join('\n');
        const shown = languageStatus(this.state, this.detail, this.restricted, this.analysing);
        this.language.text = shown.text;
        this.language.detail = shown.detail;
        this.language.busy = shown.busy;
        this.language.severity = shown.error ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
    }

    dispose(): void {
        for (const d of this.listeners) {
            d.dispose();
        }
        this.item.dispose();
        this.language.dispose();
    }
}
