// Command ids shared by the client and its tests. Pure (no `vscode` import).

/** Commands the extension registers itself; sent to the server so it leaves them out of executeCommandProvider. */
export const CLIENT_COMMANDS = [
    'onnxlint.restart',
    'onnxlint.showLogs',
    'onnxlint.selectInterpreter',
    'onnxlint.showAnalysisResult',
    'onnxlint.setArguments',
    'onnxlint.openLocation',
] as const;

/** Opens a file at a line: the deep-analysis report's links to its findings' places. */
export const OPEN_LOCATION = 'onnxlint.openLocation';

/** Asks for the command line an export script runs with in the deep analysis, then runs it again. */
export const SET_ARGUMENTS = 'onnxlint.setArguments';

/** Shows the end of the latest deep analysis (counts, "Show report"); the server then sends no message. */
export const SHOW_ANALYSIS_RESULT = 'onnxlint.showAnalysisResult';

/** Commands the server advertises; vscode-languageclient registers them, so the extension must not. */
export const SERVER_COMMANDS = [
    'onnxlint.analyzeExport',
    'onnxlint.fixAll',
    'onnxlint.showReport',
    'onnxlint.createTarget',
    'onnxlint.setScriptArguments',
    'onnxlint.showDocumentation',
] as const;

export const TRUST_MESSAGE = 'Deep analysis runs your code; trust this workspace to use it.';
