// The status bar item: server state, and the deep analyses running now.
import * as vscode from 'vscode';

export type ServerState = 'starting' | 'running' | 'stopped' | 'disabled' | 'error';

export class Status implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private state: ServerState = 'stopped';
    private detail = '';
    private readonly analyses = new Set<string>();
    private restricted = false;

    constructor() {
        this.item = vscode.window.createStatusBarItem('onnxlint.status', vscode.StatusBarAlignment.Right, 100);
        this.item.name = 'onnxlint';
        this.item.command = 'onnxlint.showLogs';
        this.render();
        this.item.show();
    }

    setState(state: ServerState, detail = '', restricted = false): void {
        this.state = state;
        this.detail = detail;
        this.restricted = restricted;
        if (state !== 'running') {
            this.analyses.clear();
        }
        this.render();
    }

    analysis(state: 'started' | 'finished', target: string): void {
        if (state === 'started') {
            this.analyses.add(target);
        } else {
            this.analyses.delete(target);
        }
        this.render();
    }

    private render(): void {
        const running = [...this.analyses];
        const base = (name: string): string => name.split(/[\\/]/).pop() ?? name;
        let text: string;
        let background: vscode.ThemeColor | undefined;
        switch (this.state) {
            case 'starting':
                text = '$(loading~spin) onnxlint';
                break;
            case 'running':
                text = running.length > 0
                    ? `$(sync~spin) onnxlint: analyzing ${running.map(base).join(', ')}`
                    : `$(check) onnxlint${this.restricted ? ' (restricted)' : ''}`;
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
        if (running.length > 0) {
            lines.push(`Analyzing: ${running.join(', ')}`);
        }
        lines.push('Click to show the logs.');
        this.item.tooltip = lines.join('\n');
    }

    dispose(): void {
        this.item.dispose();
    }
}
