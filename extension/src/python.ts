// The Python extension's environment API (ms-python.python), used only when it is installed.
import * as vscode from 'vscode';
import { environmentExecutable } from './interpreter';

interface EnvironmentPath {
    readonly id: string;
    readonly path: string;
}

interface ResolvedEnvironment {
    readonly executable: { readonly uri: vscode.Uri | undefined };
}

interface EnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    readonly onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

// Older releases export `environment`, current ones `environments`; the shape is the same.
interface PythonExtensionExports {
    environments?: EnvironmentsApi;
    environment?: EnvironmentsApi;
}

export const PYTHON_EXTENSION_ID = 'ms-python.python';

export function pythonExtensionInstalled(): boolean {
    return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

async function environmentsApi(): Promise<EnvironmentsApi | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionExports>(PYTHON_EXTENSION_ID);
    if (extension === undefined) {
        return undefined;
    }
    const exports = extension.isActive ? extension.exports : await extension.activate();
    return exports.environments ?? exports.environment;
}

/** The executable of the environment selected in the Python extension for `resource`, if any. */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
    const api = await environmentsApi();
    if (api === undefined) {
        return undefined;
    }
    return environmentExecutable({
        getActiveEnvironmentPath: () => api.getActiveEnvironmentPath(resource),
        resolveEnvironment: (env) => api.resolveEnvironment(env),
    });
}

/** Calls `listener` when the user picks another interpreter in the Python extension. */
export async function onDidChangeInterpreter(listener: () => void): Promise<vscode.Disposable | undefined> {
    try {
        const api = await environmentsApi();
        return api?.onDidChangeActiveEnvironmentPath(() => {
            listener();
        });
    } catch {
        return undefined; // the Python extension failed to activate; we fall back to PATH
    }
}
