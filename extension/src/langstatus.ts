// What the language status item says (status.ts shows it). Pure, so node:test can run it.

export type ServerState = 'starting' | 'running' | 'stopped' | 'disabled' | 'error';

/** The language status item's text, detail and whether it is busy, for a state. */
export function languageStatus(
    state: ServerState,
    detail: string,
    restricted: boolean,
    analysing: string | undefined,
): { text: string; detail: string; busy: boolean; error: boolean } {
    if (analysing !== undefined && state === 'running') {
        return { text: 'onnxlint: analyzing', detail: analysing, busy: true, error: false };
    }
    const words: Record<ServerState, string> = {
        starting: 'onnxlint: starting',
        running: restricted ? 'onnxlint (restricted)' : 'onnxlint',
        stopped: 'onnxlint: stopped',
        disabled: 'onnxlint: disabled',
        error: 'onnxlint: error',
    };
    const extra = restricted && state === 'running' ? 'static checks only; trust the workspace for deep analysis' : '';
    return {
        text: words[state],
        detail: [detail, extra].filter((d) => d !== '').join('; '),
        busy: state === 'starting',
        error: state === 'error',
    };
}
