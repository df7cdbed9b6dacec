// Work-done progress created by the server (`window/workDoneProgress/create`), shown by VS Code.
//
// vscode-languageclient shows every server progress in the status bar (ProgressLocation.Window),
// where it cannot be cancelled and sits next to our own status item. A cancellable progress (the
// deep analysis) is shown as a notification instead, with its phase and percent and a Cancel
// button that sends `window/workDoneProgress/cancel`; the others stay in the status bar.
import * as vscode from 'vscode';
import {
    type LanguageClient,
    type ProgressToken,
    WorkDoneProgress,
    type WorkDoneProgressBegin,
    WorkDoneProgressCancelNotification,
    WorkDoneProgressCreateRequest,
    type WorkDoneProgressReport,
} from 'vscode-languageclient/node';

/** The message of a report: the phase, with the percent when there is one. */
export function progressMessage(message: string | undefined, percentage: number | undefined): string | undefined {
    if (percentage === undefined) {
        return message;
    }
    return `${message ?? ''} (${Math.round(percentage)}%)`.trim();
}

class Part {
    private reported = 0;
    private progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
    private finish: (() => void) | undefined;
    private readonly listener: vscode.Disposable;
    private ended = false;

    constructor(
        private readonly client: LanguageClient,
        private readonly token: ProgressToken,
        private readonly onDone: (part: Part) => void,
    ) {
        this.listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
            if (value.kind === 'begin') {
                this.begin(value);
            } else if (value.kind === 'report') {
                this.report(value);
            } else {
                this.done();
            }
        });
    }

    private begin(params: WorkDoneProgressBegin): void {
        const cancellable = params.cancellable === true;
        void vscode.window.withProgress(
            {
                location: cancellable ? vscode.ProgressLocation.Notification : vscode.ProgressLocation.Window,
                title: params.title,
                cancellable,
            },
            (progress, cancel) => {
                this.progress = progress;
                cancel.onCancellationRequested(() => {
                    void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token: this.token });
                });
                this.report({ kind: 'report', message: params.message, percentage: params.percentage });
                return new Promise<void>((resolve) => {
                    this.finish = resolve;
                    if (this.ended) {
                        resolve();
                    }
                });
            },
        );
    }

    private report(params: WorkDoneProgressReport): void {
        const percentage = params.percentage !== undefined ? Math.max(0, Math.min(params.percentage, 100)) : undefined;
        const increment = percentage !== undefined ? Math.max(0, percentage - this.reported) : undefined;
        if (percentage !== undefined) {
            this.reported = Math.max(this.reported, percentage);
        }
        this.progress?.report({ message: progressMessage(params.message, percentage), increment });
    }

    done(): void {
        this.ended = true;
        this.listener.dispose();
        this.finish?.();
        this.onDone(this);
    }
}

/** Takes over `window/workDoneProgress/create` from vscode-languageclient's status-bar-only handler. */
export function handleServerProgress(client: LanguageClient): vscode.Disposable {
    const parts = new Set<Part>();
    const registration = client.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
        parts.add(new Part(client, params.token, (part) => parts.delete(part)));
    });
    return new vscode.Disposable(() => {
        registration.dispose();
        for (const part of [...parts]) {
            part.done();
        }
    });
}
