// Entry point: VS Code calls activate() on the first Python file or onnxlint command.
import type * as vscode from 'vscode';
import { Controller } from './client';

let controller: Controller | undefined;

export function activate(context: vscode.ExtensionContext): void {
    controller = new Controller(context, Date.now());
    context.subscriptions.push(controller);
    // Not awaited: activation must not wait for Python (commands like Restart would queue behind it).
    void controller.start();
}

export async function deactivate(): Promise<void> {
    await controller?.stop();
    controller = undefined;
}
