// Entry point: VS Code calls activate() on the first Python file or onnxlint command.
//
// The server's process is started first (early.ts), then the language client's code is loaded
// (a dynamic import, which esbuild keeps lazy in the bundle): the two overlap.
import type * as vscode from 'vscode';
import { LOADED_AT } from './loaded'; // first: it marks when the bundle started to load
import type { Controller } from './client';
import { startEarly } from './early';

let controller: Controller | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const activated = Date.now();
    const early = await startEarly(context.extensionPath).catch(() => undefined);
    const { Controller } = await import('./client.js');
    const created = new Controller(context, activated, LOADED_AT, early);
    controller = created;
    context.subscriptions.push(created);
    // Not awaited: activation must not wait for Python (commands like Restart would queue behind it).
    void created.start();
}

export async function deactivate(): Promise<void> {
    await controller?.stop();
    controller = undefined;
}
