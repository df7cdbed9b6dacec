// End-to-end test in a real VS Code: packages nothing itself; installs the given .vsix into code-server,
// drives it with headless Chromium (playwright-core) and checks what a person would see.
//
//   node out/e2e/run.js --vsix onnxlint.vsix [--python python3] [--only static,quickfix,...]
//       [--examples DIR] [--deep-file REL] [--screenshot docs/images/vscode.png] [--artifacts DIR]
//
// Scenarios: static, quickfix, lens, deep (one trusted window), untrusted, missing then switch (one
// window), restart (a server that fails its first start), partial (onnxlint without its server's
// dependencies, then a program that is not Python).
// Results go to
// <artifacts>/results.json (read by tests/extension/test_e2e.py), with a screenshot per scenario.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { TRUST_MESSAGE } from '../../src/commands';
import { type ContrastReport, contrastProbe } from './contrast';

const SCENARIOS = [
    'static',
    'quickfix',
    'lens',
    'deep',
    'deepstart',
    'script',
    'deepfix',
    'deepnotebook',
    'setup',
    'untrusted',
    'missing',
    'switch',
    'restart',
    'partial',
    'notebook',
] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Options {
    repo: string;
    e2eDir: string;
    artifacts: string;
    vsix: string;
    python: string;
    only: Set<Scenario>;
    examples: string;
    deepFile: string | undefined;
    screenshot: string | undefined;
}

interface Result {
    status: 'passed' | 'failed';
    seconds: number;
    detail: string[];
    error?: string;
}

const CHROMIUM_ARGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
];

function parseArgs(argv: string[]): Options {
    const value = (name: string): string | undefined => {
        const i = argv.indexOf(name);
        return i >= 0 ? argv[i + 1] : undefined;
    };
    const repo = path.resolve(value('--repo') ?? process.cwd());
    const only = (value('--only') ?? SCENARIOS.join(','))
        .split(',')
        .filter((s) => s !== '')
        .map((s) => {
            if (!(SCENARIOS as readonly string[]).includes(s)) {
                throw new Error(`unknown scenario ${s}; known: ${SCENARIOS.join(', ')}`);
            }
            return s as Scenario;
        });
    return {
        repo,
        e2eDir: path.resolve(value('--e2e-dir') ?? process.env.ONNXLINT_E2E_DIR ?? path.join(repo, '.e2e')),
        artifacts: path.resolve(value('--artifacts') ?? path.join(repo, 'test-artifacts', 'e2e')),
        vsix: path.resolve(value('--vsix') ?? path.join(repo, 'onnxlint.vsix')),
        python: value('--python') ?? 'python3',
        only: new Set(only),
        examples: path.resolve(value('--examples') ?? path.join(repo, 'examples')),
        deepFile: value('--deep-file'),
        screenshot: value('--screenshot'),
    };
}

/** Screenshots the README shows: scenario shot -> file next to --screenshot (docs/images/). */
const README_SHOTS: Record<string, string> = {
    hover: 'vscode-hover.png',
    'deep-progress': 'vscode-deep.png',
    'deep-report': 'vscode-report.png',
};

function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns a value other than undefined, or throws with `what` and the last state. */
async function waitFor<T>(
    what: string,
    probe: () => Promise<T | undefined>,
    timeoutMs: number,
    describeState: () => Promise<string> = () => Promise.resolve(''),
): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const found = await probe();
        if (found !== undefined) {
            return found;
        }
        if (Date.now() > deadline) {
            const state = await describeState().catch((e: unknown) => String(e));
            throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${state !== '' ? `\n${state}` : ''}`);
        }
        await sleep(500);
    }
}

function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.listen(0, '127.0.0.1', () => {
            const address = server.address();
            server.close(() => {
                if (address !== null && typeof address === 'object') {
                    resolve(address.port);
                } else {
                    reject(new Error('no port'));
                }
            });
        });
    });
}

function httpStatus(url: string): Promise<number | undefined> {
    return new Promise((resolve) => {
        const req = http.get(url, (res) => {
            res.resume();
            resolve(res.statusCode);
        });
        req.on('error', () => {
            resolve(undefined);
        });
        req.setTimeout(2000, () => {
            req.destroy();
            resolve(undefined);
        });
    });
}

// ---------------------------------------------------------------------------------------------
// Python environments and workspace

function venvPython(dir: string): string {
    return process.platform === 'win32' ? path.join(dir, 'Scripts', 'python.exe') : path.join(dir, 'bin', 'python');
}

/**
 * A venv that sees the test interpreter's packages (pygls, torch) and this checkout's onnxlint, like
 * a dev install. Not `--system-site-packages`: that exposes the *base* interpreter's site-packages,
 * which on a fresh machine has none of them (the test interpreter is itself a venv).
 */
function makeVenvWithOnnxlint(opts: Options, dir: string): string {
    execFileSync(opts.python, ['-m', 'venv', '--without-pip', dir]);
    const python = venvPython(dir);
    const sitePaths = (py: string): string[] =>
        JSON.parse(
            execFileSync(
                py,
                ['-c', 'import json, sysconfig; p = sysconfig.get_paths(); print(json.dumps(sorted({p["purelib"], p["platlib"]})))'],
                { encoding: 'utf8' },
            ),
        ) as string[];
    const [site] = sitePaths(python);
    if (site === undefined) {
        throw new Error(`no site-packages in ${dir}`);
    }
    // addsitedir (not a plain path line) also runs the .pth files there (an editable install's finder).
    const lines = [opts.repo, ...sitePaths(opts.python).map((p) => `import site; site.addsitedir(${JSON.stringify(p)})`)];
    fs.writeFileSync(path.join(site, 'onnxlint-checkout.pth'), `${lines.join('\n')}\n`);
    const version = execFileSync(python, ['-c', 'import onnxlint, pygls, lsprotocol; print(onnxlint.__version__)'], {
        encoding: 'utf8',
        cwd: os.tmpdir(),
    }).trim();
    console.log(`venv with onnxlint ${version}: ${python}`);
    return python;
}

/** An executable shell script (an interpreter wrapper for the failure scenarios). */
function writeScript(file: string, body: string): string {
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return file;
}

/** A venv without onnxlint: what a user has before installing it. */
function makeBareVenv(opts: Options, dir: string): string {
    execFileSync(opts.python, ['-m', 'venv', '--without-pip', dir]);
    return venvPython(dir);
}

function walkPython(dir: string): string[] {
    const out: string[] = [];
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== '__pycache__') {
            out.push(...walkPython(full));
        } else if (entry.isFile() && entry.name.endsWith('.py')) {
            out.push(full);
        }
    }
    return out.sort();
}

interface Workspace {
    folder: string;
    /** Relative path of the file with `dynamo=False`. */
    dynamoFile: string;
    /** Relative path of the file to run "Analyze export" on. */
    deepFile: string;
}

/** Copies examples/ so the quick fix edits a copy, never the repository. */
function makeWorkspace(opts: Options, dir: string): Workspace {
    const source = opts.examples;
    const folder = path.join(dir, 'examples');
    fs.cpSync(source, folder, { recursive: true });
    const files = walkPython(folder);
    const dynamo = files.find((f) => /dynamo\s*=\s*False/.test(fs.readFileSync(f, 'utf8')));
    if (dynamo === undefined) {
        throw new Error(`no .py file under ${source} contains dynamo=False (the e2e needs one)`);
    }
    const rel = (f: string): string => path.relative(folder, f).split(path.sep).join('/');
    // The model file of a declared target (examples/pyproject.toml): deep findings are filed on the
    // model's own lines, and the server publishes them for open documents.
    const deepFile = opts.deepFile ?? 'vision/classifier.py';
    if (!fs.existsSync(path.join(folder, deepFile))) {
        throw new Error(`${deepFile} is not in ${source}; pass --deep-file with a model file of a deep-analysis target`);
    }
    // A Markdown file: the status item must not show over it.
    fs.writeFileSync(path.join(folder, 'NOTES.md'), '# Notes\n\nNot Python.\n');
    return { folder, dynamoFile: rel(dynamo), deepFile };
}

// ---------------------------------------------------------------------------------------------
// code-server

interface CodeServer {
    url: string;
    userData: string;
    stop(): Promise<void>;
}

function codeServerBin(opts: Options): { bin: string; nodeBin: string } {
    const bin = path.join(opts.e2eDir, 'cs', 'node_modules', '.bin', 'code-server');
    const nodeBin = path.join(opts.e2eDir, 'node', 'bin');
    if (!fs.existsSync(bin) || !fs.existsSync(path.join(nodeBin, 'node'))) {
        throw new Error(`code-server is not installed in ${opts.e2eDir}; run ../shared/tools/vscode-e2e/install-code-server.sh ${opts.e2eDir}`);
    }
    return { bin, nodeBin };
}

function codeServerEnv(nodeBin: string): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${nodeBin}${path.delimiter}${process.env.PATH ?? ''}` };
    // The server must find onnxlint through the chosen interpreter only, never through these.
    delete env.PYTHONPATH;
    delete env.VIRTUAL_ENV;
    return env;
}

function installExtension(opts: Options, extensionsDir: string): void {
    const { bin, nodeBin } = codeServerBin(opts);
    const userData = path.join(extensionsDir, '..', 'install-user-data');
    // code-server's installer now and then fails to scan the folder it has just extracted
    // ("ScanningExtension: Cannot read the extension") when the machine is busy; the same
    // install then succeeds. Two more tries from an empty folder, each failure logged.
    for (let attempt = 1; ; attempt++) {
        try {
            const out = execFileSync(
                bin,
                ['--extensions-dir', extensionsDir, '--user-data-dir', userData, '--install-extension', opts.vsix, '--force'],
                { env: codeServerEnv(nodeBin), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
            );
            if (!/successfully installed/i.test(out)) {
                throw new Error(`installing ${opts.vsix} failed:\n${out}`);
            }
            return;
        } catch (err) {
            if (attempt >= 3) {
                throw err;
            }
            console.error(`install attempt ${attempt} failed, retrying: ${String(err).slice(0, 400)}`);
            fs.rmSync(extensionsDir, { recursive: true, force: true });
            fs.rmSync(userData, { recursive: true, force: true });
            execFileSync('sleep', ['2']);
        }
    }
}

async function startCodeServer(
    opts: Options,
    name: string,
    extensionsDir: string,
    settings: Record<string, unknown>,
    folder: string,
): Promise<CodeServer> {
    const { bin, nodeBin } = codeServerBin(opts);
    const userData = path.join(opts.artifacts, name, 'user-data');
    fs.rmSync(userData, { recursive: true, force: true });
    fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
    fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
    const port = await freePort();
    const log = fs.openSync(path.join(opts.artifacts, name, 'code-server.log'), 'w');
    const proc: ChildProcess = spawn(
        bin,
        [
            '--auth', 'none',
            '--bind-addr', `127.0.0.1:${port}`,
            '--disable-telemetry',
            '--disable-update-check',
            '--user-data-dir', userData,
            '--extensions-dir', extensionsDir,
            folder,
        ],
        { env: codeServerEnv(nodeBin), stdio: ['ignore', log, log], detached: true },
    );
    const url = `http://127.0.0.1:${port}`;
    await waitFor('code-server to answer', async () => ((await httpStatus(`${url}/`)) !== undefined ? true : undefined), 60_000);
    return {
        url,
        userData,
        stop: async () => {
            // code-server, its extension host and the Python server share one process group (detached).
            const alive = (): boolean => proc.exitCode === null && proc.signalCode === null;
            if (proc.pid !== undefined && alive()) {
                try {
                    process.kill(-proc.pid, 'SIGTERM');
                } catch {
                    // already gone
                }
                for (let i = 0; i < 20 && alive(); i++) {
                    await sleep(250);
                }
                if (alive()) {
                    try {
                        process.kill(-proc.pid, 'SIGKILL');
                    } catch {
                        // already gone
                    }
                }
            }
            fs.closeSync(log);
        },
    };
}

/** The tail of the extension's output channel (the client log plus the server's stderr). */
function extensionLog(userData: string, lines = 60): string {
    const found: string[] = [];
    const walk = (dir: string): void => {
        if (!fs.existsSync(dir)) {
            return;
        }
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
            const full = path.join(dir, entry.name);
            if (entry.isDirectory()) {
                walk(full);
            } else if (/onnxlint/i.test(entry.name) && entry.name.endsWith('.log')) {
                found.push(full);
            }
        }
    };
    walk(path.join(userData, 'logs'));
    return found
        .map((f) => `--- ${f}\n${fs.readFileSync(f, 'utf8').split('\n').slice(-lines).join('\n')}`)
        .join('\n');
}

/**
 * From the extension host's log: when it started, when it activated onnxlint and by which event,
 * and when its eager (`*`, `workspaceContains`) activations were done; ms since the epoch (the log
 * is in local time, as the page's clock). The start-up bench shows them next to the file's open.
 */
function extensionHostMarks(userData: string): Partial<Record<string, number | string>> {
    const logs: string[] = [];
    const walk = (dir: string): void => {
        for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
            const full = path.join(dir, entry.name);
            if (entry.isDirectory()) {
                walk(full);
            } else if (entry.name === 'remoteexthost.log' || entry.name === 'exthost.log') {
                logs.push(full);
            }
        }
    };
    walk(path.join(userData, 'logs'));
    const out: Partial<Record<string, number | string>> = {};
    const stamp = (line: string): number | undefined => {
        const m = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3})/.exec(line);
        const [year, month, day, hour, minute, second, ms] = (m?.slice(1) ?? []).map(Number);
        return m === null ? undefined : new Date(year ?? 0, (month ?? 1) - 1, day, hour, minute, second, ms).getTime();
    };
    for (const line of logs.flatMap((f) => fs.readFileSync(f, 'utf8').split('\n'))) {
        const at = stamp(line);
        if (at === undefined) {
            continue;
        }
        if (/Extension host with pid \d+ started/.test(line) && out.exthost === undefined) {
            out.exthost = at;
        } else if (line.includes('Eager extensions activated') && out.eager === undefined) {
            out.eager = at;
        } else if (line.includes('_doActivateExtension onnxlint.onnxlint') && out.activating === undefined) {
            out.activating = at;
            out.activationEvent = /activationEvent: '([^']*)'/.exec(line)?.[1] ?? '?';
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The VS Code UI

async function openWorkbench(browser: Browser, server: CodeServer, folder: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${server.url}/?folder=${encodeURIComponent(folder)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
    await page.waitForSelector('.explorer-folders-view, .explorer-viewlet', { timeout: 60_000 }).catch(() => undefined);
    await sleep(2000); // let the workbench restore its layout before typing shortcuts
    return page;
}

async function quickInput(page: Page, key: string, text: string, rowText: string | RegExp): Promise<void> {
    await page.locator('.monaco-workbench').first().click({ position: { x: 700, y: 5 } }).catch(() => undefined);
    await page.mouse.move(5, 600); // off the title bar, whose tooltip would cover the screenshots
    await page.keyboard.press(key);
    const input = page.locator('.quick-input-widget input').first();
    await input.waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(text);
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: rowText }).first();
    await row.waitFor({ state: 'visible', timeout: 15_000 });
    lastEnterAt = Date.now();
    await page.keyboard.press('Enter');
}

/** When the last quick input was accepted (the moment a file is asked to open), for timings. */
let lastEnterAt = 0;

async function activeTabLabel(page: Page): Promise<string> {
    return (await page.locator('.tabs-container .tab.active').first().getAttribute('aria-label').catch(() => null)) ?? '';
}

async function openFile(page: Page, relative: string): Promise<void> {
    const base = relative.split('/').pop() ?? relative;
    for (let attempt = 0; attempt < 4; attempt++) {
        try {
            await quickInput(page, 'Control+P', relative, base);
        } catch {
            await page.keyboard.press('Escape');
            // Quick open was not reliable in the shared README's runs; the Explorer is the fallback.
            await page.getByText(base, { exact: true }).first().click({ timeout: 5_000 }).catch(() => undefined);
        }
        try {
            await waitFor(`tab ${base}`, async () => ((await activeTabLabel(page)).startsWith(base) ? true : undefined), 8_000);
            return;
        } catch {
            await sleep(1000);
        }
    }
    throw new Error(`could not open ${relative}; active tab: ${await activeTabLabel(page)}`);
}

async function runCommand(page: Page, title: string): Promise<void> {
    // fill() replaces the whole input, including the '>' that makes it the command palette.
    await quickInput(page, 'F1', `>${title}`, title);
}

async function showProblems(page: Page): Promise<void> {
    if (!(await page.locator('.markers-panel').first().isVisible().catch(() => false))) {
        await page.keyboard.press('Control+Shift+M');
        await page.locator('.markers-panel').first().waitFor({ state: 'visible', timeout: 10_000 });
    }
}

/** The Problems panel's rows, one string per row (message, source, code, position). */
async function problemRows(page: Page): Promise<string[]> {
    await showProblems(page);
    const rows = await page.locator('.markers-panel .monaco-tl-row').allInnerTexts();
    return rows.map((r) => r.replace(/\s+/g, ' ').trim());
}

/**
 * The Problems panel's rows with its filter set to `text` (a file name): the panel draws the rows in
 * view only, and another file's long finding (its notes unfolded) can push the ones looked for out.
 */
async function problemRowsFiltered(page: Page, text: string): Promise<string[]> {
    await showProblems(page);
    const filter = page.locator('.markers-panel-action-filter input, .viewpane-filter input').first();
    if (!(await filter.isVisible().catch(() => false))) {
        return problemRows(page);
    }
    await filter.fill(text);
    await sleep(400);
    const rows = await problemRows(page);
    await filter.fill('');
    return rows;
}

/** Rows that are diagnostics from onnxlint (not the file header rows). */
function onnxlintRows(rows: string[]): string[] {
    return rows.filter((r) => /OLX\d{3}/.test(r) && /\[Ln \d+, Col \d+\]/.test(r));
}

async function notifications(page: Page): Promise<string[]> {
    return (await page.locator('.notifications-toasts .notification-toast, .notifications-center .notification-list-item').allInnerTexts()).map(
        (t) => t.replace(/\s+/g, ' ').trim(),
    );
}

async function statusBar(page: Page): Promise<string> {
    return (await page.locator('.statusbar-item', { hasText: 'onnxlint' }).allInnerTexts()).join(' | ');
}

async function editorText(page: Page): Promise<string> {
    return page.locator('.editor-group-container.active .monaco-editor .view-lines').first().innerText();
}

/** Where the active text editor is drawn. */
const ACTIVE_EDITOR = '.editor-group-container.active';
/** Where the notebook on screen is drawn: laid over its editor group, not inside its element. */
const VISIBLE_NOTEBOOK = '.notebook-editor:visible';

/** The code lens titles shown in the active editor (`scope`: VISIBLE_NOTEBOOK for a notebook's cells). */
async function lensTitles(page: Page, scope = ACTIVE_EDITOR): Promise<string[]> {
    const texts = await page.locator(`${scope} .codelens-decoration`).allInnerTexts();
    return texts.flatMap((t) => t.split(/\s*\|\s*/)).map((t) => t.trim()).filter((t) => t !== '');
}

/** The language status items' text: hovers the `{}` entry next to the language mode. */
async function languageStatusText(page: Page): Promise<string> {
    const entry = page.locator('[id="status.languageStatus"]').first();
    if (!(await entry.isVisible().catch(() => false))) {
        return `(no language status entry; status bar: ${(await page.locator('.statusbar-item').allInnerTexts()).join(' | ')})`;
    }
    await entry.hover();
    const hover = page.locator('.monaco-hover, .context-view').filter({ hasText: /\S/ }).last();
    await hover.waitFor({ state: 'visible', timeout: 5_000 }).catch(() => undefined);
    const text = (await hover.innerText().catch(() => '')).replace(/\s+/g, ' ').trim();
    await page.mouse.move(5, 600);
    return text;
}

/** Visible notification toasts whose text matches. */
function toastWith(page: Page, text: string | RegExp): ReturnType<Page['locator']> {
    return page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
}

/** Puts the cursor at a 1-based line (Go to Line), which the editor brings into view. */
async function goToLine(page: Page, line: number): Promise<void> {
    await page.keyboard.press('Control+G');
    const input = page.locator('.quick-input-widget input').first();
    await input.waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(`:${line}`);
    await page.keyboard.press('Enter');
    await sleep(500);
}

/** Puts the cursor at a 1-based line and column (Go to Line). */
async function cursorAt(page: Page, line: number, column: number): Promise<void> {
    await page.keyboard.press('Control+G');
    const input = page.locator('.quick-input-widget input').first();
    await input.waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(`:${line}:${column}`);
    await page.keyboard.press('Enter');
    await sleep(300);
}

/** Puts the cursor at a 1-based line and column (Go to Line), then asks for the hover there. */
async function hoverAt(page: Page, line: number, column: number): Promise<string[]> {
    await cursorAt(page, line, column);
    await page.keyboard.press('Control+K');
    await page.keyboard.press('Control+I');
    const parts = page.locator('.monaco-hover .rendered-markdown');
    await parts.first().waitFor({ state: 'visible', timeout: 10_000 });
    await sleep(500);
    return (await parts.allInnerTexts()).map((t) => t.trim());
}

/** The line (1-based) and column of the first occurrence of `needle` in a workspace file. */
function findIn(ws: Workspace, relative: string, needle: string): { line: number; column: number } {
    const lines = fs.readFileSync(path.join(ws.folder, relative), 'utf8').split('\n');
    const index = lines.findIndex((l) => l.includes(needle));
    if (index < 0) {
        throw new Error(`${needle} is not in ${relative}`);
    }
    return { line: index + 1, column: (lines[index] ?? '').indexOf(needle) + 1 };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Ctx {
    opts: Options;
    page: Page;
    ws: Workspace;
    server: CodeServer;
    detail: string[];
    shot: (name: string) => Promise<void>;
}

/**
 * Double-clicks a row of the Problems panel (the cursor and the focus go to the diagnostic in
 * the editor). The mouse resting on a row from an earlier click shows the row's hover, which
 * covers the row and takes the click: the mouse is moved off and hovers closed first, and the
 * click is tried again if something still covers the row.
 */
async function openProblem(page: Page, row: Locator): Promise<void> {
    for (let attempt = 1; ; attempt++) {
        await page.mouse.move(0, 0);
        await page.keyboard.press('Escape');
        await sleep(300);
        try {
            await row.dblclick({ timeout: 10_000 });
            return;
        } catch (e) {
            if (attempt >= 3) {
                throw e;
            }
        }
    }
}

/**
 * The proof runs after the findings are shown: ask for the quick fixes (Ctrl+.) where
 * `placeCursor` puts the cursor (false: not yet, try again) until the proven torch.where rewrite
 * is offered; check that its title says what was proven, and return it.
 */
async function waitForProvenWhere(ctx: Ctx, what: string, placeCursor: () => Promise<boolean>): Promise<Locator> {
    const page = ctx.page;
    const entries = page.locator('.action-widget [role="option"], .context-view [role="menuitem"]');
    const action = entries.filter({ hasText: 'torch.where' }).first();
    const started = Date.now();
    let menu: string[] = [];
    await waitFor(
        what,
        async () => {
            await page.keyboard.press('Escape');
            if (!(await placeCursor())) {
                return undefined;
            }
            await page.keyboard.press('Control+.');
            await entries.first().waitFor({ state: 'visible', timeout: 5_000 }).catch(() => undefined);
            menu = (await entries.allInnerTexts()).map((t) => t.trim());
            if (await action.isVisible().catch(() => false)) {
                return true;
            }
            await page.keyboard.press('Escape');
            await sleep(2_000);
            return undefined;
        },
        300_000,
        async () => `quick-fix menu: ${JSON.stringify(menu)}\n${await describeState(ctx)}`,
    );
    const title = (await action.innerText()).trim();
    ctx.detail.push(`proven fix offered ${((Date.now() - started) / 1000).toFixed(1)}s after the analysis: ${title}`);
    ctx.detail.push(`quick-fix menu: ${JSON.stringify(menu)}`);
    if (!title.includes('Rewrite with torch.where (exports; outputs match')) {
        throw new Error(`the quick fix's title does not say what was proven: ${title}`);
    }
    return action;
}

async function describeState(ctx: Ctx): Promise<string> {
    const rows = await problemRows(ctx.page).catch(() => []);
    return [
        `problems: ${JSON.stringify(rows)}`,
        `notifications: ${JSON.stringify(await notifications(ctx.page).catch(() => []))}`,
        `status bar: ${await statusBar(ctx.page).catch(() => '')}`,
        `language status: ${await languageStatusText(ctx.page).catch(() => '')}`,
        extensionLog(ctx.server.userData),
    ].join('\n');
}

async function waitForStaticDiagnostics(ctx: Ctx, timeoutMs = 90_000): Promise<string[]> {
    await openFile(ctx.page, ctx.ws.dynamoFile);
    const rows = await waitFor(
        'onnxlint diagnostics in the Problems panel',
        async () => {
            const broken = (await notifications(ctx.page)).find((n) => /failed to start|crashed|not installed/.test(n));
            if (broken !== undefined) {
                throw new Error(`the server did not start: ${broken}\n${await describeState(ctx)}`);
            }
            const found = onnxlintRows(await problemRows(ctx.page));
            return found.length > 0 ? found : undefined;
        },
        timeoutMs,
        () => describeState(ctx),
    );
    ctx.detail.push(...rows.map((r) => `problem: ${r}`));
    return rows;
}

/**
 * Diagnostics appear in the Problems panel with their codes, including the dynamo=False one; the
 * time from opening the file to its first squiggles, broken down by the extension's timing log;
 * the status item only over Python files; the LSP trace with `onnxlint.trace.server` alone; the
 * server's log lines at their own level.
 */
async function scenarioStatic(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    await openFile(page, ctx.ws.dynamoFile);
    const opened = lastEnterAt;
    // Checked in the page on every animation frame, stamped there (the same clock as `opened`): a
    // poll from here every 500 ms added 0-0.5 s to the figure.
    const selector = '.editor-group-container.active .squiggly-error, .editor-group-container.active .squiggly-warning';
    const seen = await page
        .waitForFunction((sel: string) => (document.querySelector(sel) !== null ? Date.now() : 0), selector, {
            polling: 'raf',
            timeout: 90_000,
        })
        .then((handle) => handle.jsonValue())
        .catch(async (error: unknown) => {
            throw new Error(`timed out waiting for the first squiggles: ${String(error)}\n${await describeState(ctx)}`);
        });
    const rows = await waitForStaticDiagnostics(ctx);
    const dynamoRow = rows.find((r) => /dynamo\s*=\s*False/.test(r));
    if (dynamoRow === undefined) {
        throw new Error(`no diagnostic about dynamo=False among ${JSON.stringify(rows)}`);
    }
    if (!/OLX4\d\d/.test(dynamoRow)) {
        throw new Error(`the dynamo=False diagnostic has no OLX4xx code: ${dynamoRow}`);
    }
    // Start-up: from the file being opened to its squiggles, and the extension's own breakdown
    // (written first: the start-up bench reads it for any checkout, whatever the checks below say).
    const log = extensionLog(ctx.server.userData, 10_000);
    const marks = /timing-json (\{.*\})/.exec(log);
    if (marks === null) {
        throw new Error(`no timing line in the extension log\n${log}`);
    }
    const m = JSON.parse(marks[1] ?? '{}') as Record<string, number>;
    const timing = { opened, squiggles: seen, ...extensionHostMarks(ctx.server.userData), ...m };
    fs.writeFileSync(path.join(ctx.opts.artifacts, 'timing.json'), JSON.stringify(timing, null, 2));
    const after = (t: number | undefined): string => (t !== undefined ? `+${t - opened} ms` : '?');
    ctx.detail.push(
        `start-up from opening the file: extension activated ${after(m.activated)}, client loaded and interpreter resolved ${after(m.interpreter)}, ` +
            `server initialized ${after(m.initialized)}, first diagnostics ${after(m.diagnostics)}, squiggles visible ${after(seen)}`,
    );

    const status = await waitFor('the language status item to show the server running', async () => {
        const text = await languageStatusText(page);
        return text.includes('onnxlint') && !text.includes('starting') ? text : undefined;
    }, 10_000);
    ctx.detail.push(`language status: ${status}`);
    // One indicator: the language status item, no status bar item saying the same (issue 27).
    const second = await statusBar(page);
    if (second !== '') {
        throw new Error(`a status bar item besides the language status item: ${second}`);
    }
    await ctx.shot('static');

    // The status item is for Python files: not over Markdown.
    await openFile(page, 'NOTES.md');
    await waitFor('the status item to hide over Markdown', async () => (!(await languageStatusText(page)).includes('onnxlint') ? true : undefined), 10_000);
    ctx.detail.push('status item hidden over NOTES.md');
    await openFile(page, ctx.ws.dynamoFile);
    await waitFor('the status item over Python again', async () => ((await languageStatusText(page)).includes('onnxlint') ? true : undefined), 10_000);

    // onnxlint.trace.server = messages (set for this window) traces without touching the log level.
    if (!log.includes('Sending request \'initialize')) {
        throw new Error(`onnxlint.trace.server is on, but the log has no traced messages\n${log.slice(-3000)}`);
    }
    ctx.detail.push('trace: the initialize request is in the log');
    const errors = log.split('\n').filter((l) => l.includes('[error]') && /Cancel notification|WARNING|INFO/.test(l));
    if (errors.length > 0) {
        throw new Error(`server log lines shown as errors: ${JSON.stringify(errors.slice(0, 5))}`);
    }
}

/** The quick fix for dynamo=False turns it into dynamo=True, and its diagnostic goes away. */
async function scenarioQuickFix(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const rows = await waitForStaticDiagnostics(ctx);
    const dynamoRow = rows.find((r) => /dynamo\s*=\s*False/.test(r) && /OLX4\d\d/.test(r));
    if (dynamoRow === undefined) {
        throw new Error(`no OLX4xx dynamo diagnostic to fix among ${JSON.stringify(rows)}`);
    }
    const code = /OLX4\d\d/.exec(dynamoRow)?.[0] ?? '';
    const before = rows.filter((r) => r.includes(code)).length;
    // Double-clicking the row moves the cursor and the focus to the diagnostic in the editor, where
    // Ctrl+. opens the editor's quick fix menu (a single click leaves the focus in the panel).
    await openProblem(page, page.locator('.markers-panel .monaco-tl-row', { hasText: code }).first());
    await sleep(500);
    await page.keyboard.press('Control+.');
    // The fix for this code, not the "Suppress" and "Show documentation" actions next to it.
    const entries = page.locator('.action-widget [role="option"], .context-view [role="menuitem"]');
    const action = entries.filter({ hasText: code }).filter({ hasNotText: /suppress|documentation/i }).first();
    await action.waitFor({ state: 'visible', timeout: 15_000 }).catch(async (e: unknown) => {
        const offered = await page.locator('.action-widget, .context-view').evaluateAll((els) => els.map((el) => el.outerHTML.slice(0, 4000)));
        throw new Error(`no dynamo quick fix offered (${String(e)}); menu: ${JSON.stringify(offered)}\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`quick fix offered: ${(await action.innerText()).trim()}`);
    // Issue 27, item 7: the title says everything the fix changes; the rule's page and Fix all are in the menu.
    const menu = (await entries.allInnerTexts()).map((t) => t.trim());
    ctx.detail.push(`quick-fix menu: ${JSON.stringify(menu)}`);
    if (code === 'OLX401' && !(await action.innerText()).includes('remove `do_constant_folding`')) {
        throw new Error(`the quick fix's title does not say it removes do_constant_folding: ${await action.innerText()}`);
    }
    if (!menu.some((t) => t.includes(`Show documentation for ${code}`)) || !menu.some((t) => t.includes('Fix all auto-fixable problems'))) {
        throw new Error(`no "Show documentation" or "Fix all" in the quick-fix menu: ${JSON.stringify(menu)}`);
    }
    await ctx.shot('quickfix-menu');
    if (ctx.opts.screenshot !== undefined) {
        await page.screenshot({ path: ctx.opts.screenshot });
    }
    await action.click();
    const text = await waitFor('dynamo=True in the editor', async () => {
        const t = await editorText(page);
        return /dynamo\s*=\s*True/.test(t) ? t : undefined;
    }, 15_000, () => editorText(page));
    const line = text.split('\n').find((l) => /dynamo\s*=\s*True/.test(l)) ?? '';
    ctx.detail.push(`fixed line: ${line.trim()}`);
    await waitFor(`one ${code} diagnostic fewer`, async () => {
        const now = onnxlintRows(await problemRows(page)).filter((r) => r.includes(code)).length;
        return now < before ? now : undefined;
    }, 30_000, () => describeState(ctx));
    await ctx.shot('quickfix');
    // Fix all says what it did (the file still has the safe dynamo_export fix to apply).
    await runCommand(page, 'onnxlint: Fix all');
    const said = toastWith(page, /onnxlint: (\d+ fix(es)? applied|nothing to fix)/);
    await said.waitFor({ state: 'visible', timeout: 30_000 }).catch(async () => {
        throw new Error(`Fix all did not say what it did\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`Fix all: ${(await said.innerText()).replace(/\s+/g, ' ')}`);
    // The later scenarios read export.py as the examples have it: put it back on disk and drop the
    // buffer's changes (closing a dirty editor would ask to save it, and the next Enter would say yes).
    fs.copyFileSync(path.join(ctx.opts.examples, ctx.ws.dynamoFile), path.join(ctx.ws.folder, ctx.ws.dynamoFile));
    await runCommand(page, 'File: Revert File');
    await waitFor('export.py reverted', async () => (/dynamo\s*=\s*False/.test(await editorText(page)) ? true : undefined), 15_000, () =>
        editorText(page),
    );
}

/** The export calls of examples/export.py and the lens each must carry (issue 27, item 3). */
const EXPORT_LENSES = [
    { call: 'tox.export(', title: 'Analyze export (DetectorHead, TorchScript exporter, opset 13, dynamic batch, width: runs this script)' },
    { call: 'torch.onnx.dynamo_export(', title: 'Analyze export (DetectorHead, torch.onnx.dynamo_export: runs export_with_dynamo_export())' },
    { call: 'torch.onnx.export(', title: 'Analyze export (DetectorHead, dynamo exporter, opset 13, dynamic batch: runs export_to_memory())' },
] as const;

/** Whether a lens with `title` is drawn right above the editor line holding `text`. */
async function lensAbove(page: Page, title: string, text: string): Promise<boolean> {
    const line = await page.locator('.editor-group-container.active .view-line', { hasText: text }).first().boundingBox();
    const lens = page.locator('.editor-group-container.active .codelens-decoration', { hasText: title });
    const boxes = await Promise.all((await lens.all()).map((l) => l.boundingBox()));
    return boxes.some((b) => b !== null && line !== null && Math.abs(line.y - (b.y + b.height)) < 25);
}

/**
 * Over each export call of the export script, the lens names that call (its model, exporter, opset
 * and dynamic dims) and how it analyses it: the legacy call by running the script, the two others by
 * calling the function that makes them; none names `classifier` (declared in the same module as
 * `detector`). The hover over a finding is the short summary.
 */
async function scenarioLens(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const exportFile = 'export.py';
    await openFile(page, exportFile);
    // The editor draws the lenses of the lines in view only: bring each call into view.
    const titles = new Set<string>();
    for (const { call, title } of EXPORT_LENSES) {
        const line = findIn(ctx.ws, exportFile, call).line;
        await goToLine(page, line);
        const above = await waitFor(`the lens "${title}" above line ${line}`, async () => {
            for (const t of await lensTitles(page)) {
                titles.add(t);
            }
            return (await lensAbove(page, title, call)) ? true : undefined;
        }, 60_000, async () => `lenses: ${JSON.stringify(await lensTitles(page))}\n${await describeState(ctx)}`);
        ctx.detail.push(`lens "${title}" right above line ${line}: ${above}`);
    }
    ctx.detail.push(`lenses: ${JSON.stringify([...titles])}`);
    const bare = [...titles].filter((t) => /^Analyze export$/.test(t) || (t.startsWith('Analyze export') && !/\(.+\)$/.test(t)));
    if (bare.length > 0 || [...titles].some((t) => t.includes('classifier'))) {
        throw new Error(`a lens does not say what it analyses, or names the wrong target: ${JSON.stringify([...titles])}`);
    }
    await ctx.shot('lens');

    const where = findIn(ctx.ws, exportFile, 'dynamo=False');
    const parts = await hoverAt(page, where.line, where.column + 2);
    const ours = parts.find((p) => p.startsWith('OLX401'));
    if (ours === undefined) {
        throw new Error(`no onnxlint hover: ${JSON.stringify(parts)}`);
    }
    ctx.detail.push(`hover (${ours.length} characters): ${ours.replace(/\s+/g, ' ').slice(0, 200)}...`);
    if (ours.length >= 900 || !ours.includes('Use instead') || !ours.includes('Full rule page')) {
        throw new Error(`the hover is not the short summary (${ours.length} characters): ${ours}`);
    }
    if (/--fix|##|Fix safety/.test(ours)) {
        throw new Error(`the hover shows the whole rule page: ${ours}`);
    }
    await ctx.shot('hover');
    await page.keyboard.press('Escape');
}

/** The Problems panel's onnxlint rows, each with the file it is listed under. */
async function problemsByFile(page: Page, only = ''): Promise<{ file: string; row: string }[]> {
    const out: { file: string; row: string }[] = [];
    let file = '';
    for (const row of only !== '' ? await problemRowsFiltered(page, only) : await problemRows(page)) {
        if (/OLX\d{3}/.test(row) && /\[Ln \d+, Col \d+\]/.test(row)) {
            out.push({ file, row });
        } else {
            file = row;
        }
    }
    return out;
}

/** Waits for onnxlint rows in the Problems panel that were not there `before` and come from the deep analysis. */
async function waitForDeepRows(ctx: Ctx, before: Set<string>, what: string, file = ''): Promise<void> {
    const rows = await waitFor(
        what,
        async () => {
            const all = file !== '' ? await problemRowsFiltered(ctx.page, file) : await problemRows(ctx.page);
            const fresh = onnxlintRows(all).filter((r) => !before.has(r) && /OLX8\d\d|deep analysis/.test(r));
            return fresh.length > 0 ? fresh : undefined;
        },
        30_000,
        () => describeState(ctx),
    );
    ctx.detail.push(...rows.map((r) => `deep problem: ${r}`));
}

/**
 * The lens over the legacy export call runs that call (the script, up to it) with only export.py
 * open: one progress item (a notification with the phase and percent, cancellable), then a
 * notification with the counts and "Show report". The findings are in the model file, which is not
 * open: they are in the Problems panel under it, and still there when it is opened afterwards
 * (issue 27, item 2). The report, in a dark theme, is readable: every text read back from the
 * webview stands out from its background (item 1). Then a target's analysis is cancelled.
 */
async function scenarioDeep(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    if (fs.existsSync(path.join(ctx.ws.folder, 'export_notebook.ipynb'))) {
        // (written by the notebook scenario) the status item shows over a notebook too
        await openFile(page, 'NOTES.md');
        await openFile(page, 'export_notebook.ipynb');
        await waitFor('the status item over a notebook', async () => ((await languageStatusText(page)).includes('onnxlint') ? true : undefined), 10_000);
        ctx.detail.push('status item shown over export_notebook.ipynb');
    }
    // export.py as the examples have it (the quickfix scenario changed it): on disk, and in its editor
    await openFile(page, 'export.py');
    fs.copyFileSync(path.join(ctx.opts.examples, 'export.py'), path.join(ctx.ws.folder, 'export.py'));
    await runCommand(page, 'File: Revert File');
    await waitFor('export.py as the examples have it', async () => (/dynamo\s*=\s*False/.test(await editorText(page)) ? true : undefined), 15_000, () =>
        editorText(page),
    );
    await runCommand(page, 'View: Close All Editors');
    await openFile(page, 'export.py');
    await waitFor('static diagnostics first', async () => {
        const rows = onnxlintRows(await problemRows(page));
        return rows.length > 0 ? rows : undefined;
    }, 90_000, () => describeState(ctx));
    const model = 'detector.py';
    const before = (await problemsByFile(page)).filter((p) => p.file.startsWith(model));
    if (before.length > 0) {
        throw new Error(`${model} has problems before the analysis, so this scenario tests nothing: ${JSON.stringify(before)}`);
    }
    const { title, call } = EXPORT_LENSES[0];
    const callLine = findIn(ctx.ws, 'export.py', call).line;
    const lens = page.locator('.editor-group-container.active .codelens-decoration a', { hasText: title }).first();
    await lens.waitFor({ state: 'visible', timeout: 60_000 });
    const started = Date.now();
    await lens.click();
    const target = `export.py:${callLine}`;
    // While it runs: exactly one progress item, the notification, with a Cancel button.
    const progress = toastWith(page, `analyzing ${target}`);
    await progress.waitFor({ state: 'visible', timeout: 120_000 }).catch(async () => {
        throw new Error(`no progress notification\n${await describeState(ctx)}`);
    });
    let most = 0;
    let sawPercent = '';
    const end = toastWith(page, `onnxlint: ${target}: `);
    while (!(await end.isVisible().catch(() => false))) {
        const toasts = (await notifications(page)).filter((n) => /analyzing/i.test(n));
        const bars = (await page.locator('.statusbar-item').allInnerTexts()).filter((t) => /analyzing/i.test(t));
        most = Math.max(most, toasts.length + bars.length);
        const text = toasts[0] ?? '';
        if (/\d+%/.test(text)) {
            sawPercent = text;
            if (most === 1 && !fs.existsSync(path.join(ctx.opts.artifacts, 'deep-progress.png'))) {
                await ctx.shot('deep-progress');
            }
        }
        if (Date.now() - started > 360_000) {
            throw new Error(`the analysis did not end\n${await describeState(ctx)}`);
        }
        await sleep(100);
    }
    ctx.detail.push(`progress items at once: ${most}; with phase and percent: ${sawPercent}`);
    if (most !== 1) {
        throw new Error(`expected one progress item, saw ${most}`);
    }
    const cancellable = await progress.locator('.monaco-button, .action-label', { hasText: /cancel/i }).count().catch(() => 0);
    ctx.detail.push(`cancel button seen: ${cancellable > 0 || sawPercent !== ''}`);
    const summary = (await end.innerText()).replace(/\s+/g, ' ');
    ctx.detail.push(`deep analysis took ${((Date.now() - started) / 1000).toFixed(1)}s; end: ${summary}`);
    if (!/\d+ findings? \(/.test(summary) || !summary.includes('Show report')) {
        throw new Error(`the end notification has no counts or no Show report: ${summary}`);
    }
    // The model file is not open: its deep findings are listed under it all the same...
    const deepIn = async (): Promise<string[] | undefined> => {
        const rows = (await problemsByFile(page, model)).filter((p) => p.file.startsWith(model) && /OLX8\d\d|deep analysis/.test(p.row));
        return rows.length > 0 ? rows.map((p) => p.row) : undefined;
    };
    const closedRows = await waitFor(`deep findings under ${model}, which is not open`, deepIn, 30_000, () => describeState(ctx));
    ctx.detail.push(...closedRows.map((r) => `deep problem in ${model} (not open): ${r}`));
    await ctx.shot('deep');
    // ...and when it is opened afterwards, with its static findings and a squiggle on their line.
    await openFile(page, `vision/${model}`);
    await sleep(1500);
    const openRows = await waitFor(`deep findings in ${model} once opened`, deepIn, 30_000, () => describeState(ctx));
    ctx.detail.push(...openRows.map((r) => `deep problem in ${model} (opened after): ${r}`));
    const squiggles = await page.locator('.editor-group-container.active .squiggly-error').count();
    ctx.detail.push(`error squiggles in ${model}: ${squiggles}`);
    if (squiggles === 0) {
        throw new Error(`no error squiggle in ${model} once opened\n${await describeState(ctx)}`);
    }
    await ctx.shot('deep-model-opened');

    await runCommand(page, 'onnxlint: Show the last analysis result');
    const again = toastWith(page, `onnxlint: ${target}: `);
    await again.waitFor({ state: 'visible', timeout: 20_000 });
    await again.locator('.monaco-button', { hasText: 'Show report' }).first().click();
    const reportTab = page.locator('.tabs-container .tab', { hasText: 'onnxlint report' });
    await reportTab.first().waitFor({ state: 'visible', timeout: 20_000 });
    // The newest webview is the report (a notebook's outputs are webviews too).
    const frame = page.locator('iframe.webview.ready').last().contentFrame().locator('iframe#active-frame').contentFrame();
    await frame.getByText('onnxlint deep analysis').first().waitFor({ state: 'visible', timeout: 20_000 });
    const heading = await frame.locator('body').innerText({ timeout: 20_000 });
    ctx.detail.push(`report tab: ${heading.replace(/\s+/g, ' ').slice(0, 120)}`);
    if (!heading.includes(target)) {
        throw new Error(`the report does not show ${target}: ${heading.slice(0, 500)}`);
    }
    // Read back from the webview: the theme's colours, and every text against its background.
    const colours: ContrastReport = await frame.locator('body').evaluate(contrastProbe);
    const low = colours.texts.filter((t) => t.contrast < 3);
    ctx.detail.push(
        `report colours: text ${colours.bodyColor} on ${colours.bodyBackground}; ${colours.texts.length} texts, ` +
            `lowest contrast ${Math.min(...colours.texts.map((t) => t.contrast))}`,
    );
    await ctx.shot('deep-report');
    if (colours.texts.length < 20 || low.length > 0) {
        throw new Error(`report text that does not stand out in the dark theme: ${JSON.stringify(low.slice(0, 10))}`);
    }
    // A finding's place in the report is a link back to the editor (issue 27, item 7).
    const place = frame.locator('a.loc').first();
    const placeText = (await place.innerText({ timeout: 10_000 })).trim();
    await place.click();
    const placeFile = path.basename(placeText.split(':')[0] ?? '');
    await waitFor(`${placeText} opened from the report`, async () => ((await activeTabLabel(page)).startsWith(placeFile) ? true : undefined), 15_000, () =>
        activeTabLabel(page),
    );
    ctx.detail.push(`report link ${placeText} opened ${await activeTabLabel(page)}`);

    // Cancelled from the notification: another target, whose result is not cached yet.
    await runCommand(page, 'View: Close Editor'); // the report, in its own group
    await openFile(page, 'vision/classifier.py');
    const other = page.locator('.editor-group-container.active .codelens-decoration a', { hasText: 'Analyze export (classifier)' }).first();
    await other.waitFor({ state: 'visible', timeout: 60_000 });
    await other.click();
    const running = toastWith(page, 'analyzing classifier');
    await running.waitFor({ state: 'visible', timeout: 60_000 });
    await running.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
    const cancelled = toastWith(page, 'onnxlint: classifier: cancelled');
    await cancelled.waitFor({ state: 'visible', timeout: 60_000 }).catch(async () => {
        throw new Error(`no "cancelled" after Cancel in the progress notification\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`after Cancel: ${(await cancelled.innerText()).replace(/\s+/g, ' ')}`);
}

/**
 * For bench/bench_editor_startup.py --deep: in a fresh window, open the export script, wait until the
 * server says the deep worker it starts in the background is ready, click the legacy call's lens and
 * time the analysis to its end notification (the workspace is a fresh copy: nothing is cached).
 * Writes deep-timing.json (ms: lens shown and worker ready after the file was opened; the analysis).
 */
async function scenarioDeepStart(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const opened = Date.now();
    await openFile(page, 'export.py');
    const { title, call } = EXPORT_LENSES[0];
    const line = findIn(ctx.ws, 'export.py', call).line;
    const lens = page.locator('.editor-group-container.active .codelens-decoration a', { hasText: title }).first();
    await lens.waitFor({ state: 'visible', timeout: 60_000 });
    const lensShown = Date.now() - opened;
    const ready = await waitFor(
        'the deep worker ready',
        () => Promise.resolve(extensionLog(ctx.server.userData, 400).includes('deep worker ready') ? Date.now() - opened : undefined),
        120_000,
        () => describeState(ctx),
    );
    const clicked = Date.now();
    await lens.click();
    const end = toastWith(page, `onnxlint: export.py:${line}: `);
    await end.waitFor({ state: 'visible', timeout: 300_000 });
    const analysis = Date.now() - clicked;
    const timing = { lens: lensShown, workerReady: ready, analysis };
    ctx.detail.push(`deep start-up: ${JSON.stringify(timing)}; end: ${(await end.innerText()).replace(/\s+/g, ' ')}`);
    fs.writeFileSync(path.join(ctx.opts.artifacts, 'deep-timing.json'), JSON.stringify(timing, null, 2));
}

/** A project folder of the workspace with its own pyproject.toml and `files`; its path. */
function writeProject(ctx: Ctx, folder: string, files: Record<string, string>): string {
    const dir = path.join(ctx.ws.folder, folder);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[tool.onnxlint]\n');
    for (const [name, text] of Object.entries(files)) {
        fs.writeFileSync(path.join(dir, name), text);
    }
    return dir;
}

/**
 * Clicks the active editor's lens titled `title` and waits for the analysis's end notification
 * (`end`); its text. `scope`: VISIBLE_NOTEBOOK for a lens in a notebook's cell.
 */
async function analyzeByLens(ctx: Ctx, title: string, end: RegExp, scope = ACTIVE_EDITOR): Promise<string> {
    const page = ctx.page;
    const lens = page.locator(`${scope} .codelens-decoration a`, { hasText: title }).first();
    await lens.waitFor({ state: 'visible', timeout: 60_000 }).catch(async () => {
        throw new Error(`no "${title}" lens: ${JSON.stringify(await lensTitles(page, scope))}\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`lenses: ${JSON.stringify(await lensTitles(page, scope))}`);
    const started = Date.now();
    await lens.click();
    const toast = toastWith(page, end);
    await toast.waitFor({ state: 'visible', timeout: 300_000 }).catch(async () => {
        throw new Error(`the analysis did not end with ${String(end)}\n${await describeState(ctx)}`);
    });
    const text = (await toast.innerText()).replace(/\s+/g, ' ');
    ctx.detail.push(`analysis took ${((Date.now() - started) / 1000).toFixed(1)}s; end: ${text}`);
    return text;
}

const TINY_SCRIPT = `import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            y = y * 2
        return y


if __name__ == "__main__":
    model = TinyNet()
    model.load_state_dict(torch.load("checkpoints/tiny.pt"))  # not there: it does not matter
    torch.onnx.export(model.eval(), (torch.randn(2, 4),), "tiny.onnx")
`;

/**
 * Issue 18: in a project that declares no deep-analysis target (plain/, with its own pyproject.toml),
 * the lens above an export call runs the export script itself up to that call, and the deep
 * findings reach the Problems panel.
 */
async function scenarioScript(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    writeProject(ctx, 'plain', { 'export_tiny.py': TINY_SCRIPT });
    await openFile(page, 'plain/export_tiny.py');
    const before = new Set(onnxlintRows(await problemRows(page)));
    await analyzeByLens(ctx, 'Analyze export (TinyNet, dynamo exporter: runs this script)', /onnxlint: export_tiny\.py:\d+: /);
    await waitForDeepRows(ctx, before, 'deep findings of the script in the Problems panel', 'export_tiny');
    await ctx.shot('script-lens');
}

/** A tensor `if` whose proven rewrite is torch.where; tests/server/test_deep_fixes.py's too. */
const FIX_SCRIPT_FILE = path.join('tests', 'server', 'fixtures', 'tensor_if_export.py');
/** The script with the proven rewrite applied: the four lines of the if/else become one. */
function fixedScript(script: string): string {
    return script.replace(
        '        if y.sum() > 0:\n            y = y * 2\n        else:\n            y = y - 1\n',
        '        y = torch.where(y.sum() > 0, y * 2, y - 1)\n',
    );
}

/**
 * Issue 29 in the editor: after "Analyze export", the deep finding at a tensor `if` gets a quick fix
 * once its rewrite is proven in the background, titled with what was proven; applying it replaces
 * the if/else lines (and only them), and the next analysis of the saved file has no finding.
 */
async function scenarioDeepFix(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const script = fs.readFileSync(path.join(ctx.opts.repo, FIX_SCRIPT_FILE), 'utf8');
    const file = path.join(writeProject(ctx, 'fixme', { 'export_fix.py': script }), 'export_fix.py');
    await openFile(page, 'fixme/export_fix.py');
    const lens = 'Analyze export (M, ';
    await analyzeByLens(ctx, lens, /onnxlint: export_fix\.py:19: .*finding/);
    // The proof runs after the findings are shown: ask for the quick fixes at the `if` until it is offered.
    const ifLine = script.split('\n').findIndex((l) => l.includes('if y.sum() > 0')) + 1;
    const action = await waitForProvenWhere(ctx, 'the proven torch.where quick fix at the if', async () => {
        await cursorAt(page, ifLine, 12);
        return true;
    });
    await ctx.shot('deepfix-menu');
    await action.click();
    await waitFor('torch.where in the editor', async () => ((await editorText(page)).includes('torch.where(') ? true : undefined), 15_000, () =>
        editorText(page),
    );
    await page.keyboard.press('Control+S');
    const saved = await waitFor(
        'the fixed file saved',
        () => {
            const t = fs.readFileSync(file, 'utf8');
            return Promise.resolve(t !== script ? t : undefined);
        },
        15_000,
    );
    if (saved !== fixedScript(script)) {
        throw new Error(`the fix changed other lines than the if/else:\n${saved}`);
    }
    ctx.detail.push('applied: the if/else (4 lines) became one torch.where line, nothing else changed');
    // Analysed again (the export call is now 3 lines up): clean.
    await analyzeByLens(ctx, lens, /onnxlint: export_fix\.py:16: .*no findings/);
    // (the if's static OLX101, which the deep OLX802 confirmed, and every deep finding)
    const left = await waitFor(
        'no finding of the if, and no deep finding, left in export_fix.py',
        async () => {
            const rows = (await problemsByFile(page, 'export_fix')).filter((r) => r.file.includes('export_fix'));
            return rows.some((r) => /OLX101|OLX8\d\d|deep analysis/.test(r.row)) ? undefined : rows;
        },
        30_000,
        () => describeState(ctx),
    );
    ctx.detail.push(`problems left in export_fix.py: ${JSON.stringify(left.map((r) => r.row))}`);
    await ctx.shot('deepfix');
}

const NEEDS_CONFIG = `import argparse

import torch
from torch import nn


class CfgNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            y = y * 2
        return y


p = argparse.ArgumentParser()
p.add_argument("--config", required=True, help="the model's config file")
args = p.parse_args()
torch.onnx.export(CfgNet().eval(), (torch.randn(2, 4),), "cfg.onnx")
`;

const NO_TARGET = `import torch
from torch import nn

WIDTH = 8


class WideNet(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.fc = nn.Linear(4, width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        y = self.head(self.fc(x))
        if y.sum() > 0:
            y = y * 2
        return y


def export(path):
    model = WideNet(WIDTH, 3)
    x = torch.randn(2, 4)
    torch.onnx.export(model.eval(), (x,), path)
`;

/**
 * Issue 27, item 5. "Set arguments...": a script whose run stops on argparse's required --config
 * ends with a notification offering "Set arguments..." and a quick fix of the same name on the
 * finding; the quick fix's input box writes the [[tool.onnxlint.scripts]] entry and the analysis runs
 * again, past parse_args(). "Create a target": the lens over an export call nothing can run writes a
 * factory with the call site's constructor arguments and example, saves the file and analyses it.
 */
async function scenarioSetup(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const dir = writeProject(ctx, 'plain', { 'export_cfg.py': NEEDS_CONFIG, 'export_wide.py': NO_TARGET });
    const pyproject = path.join(dir, 'pyproject.toml');
    await runCommand(page, 'View: Close All Editors');
    await openFile(page, 'plain/export_cfg.py');
    const said = await analyzeByLens(ctx, 'Analyze export (CfgNet, dynamo exporter: runs this script)', /onnxlint: export_cfg\.py:\d+: /);
    // The language status item (issue 27, item 7) is there while the logs have the focus.
    await runCommand(page, 'onnxlint: Show logs');
    await sleep(1000);
    const language = await languageStatusText(page);
    ctx.detail.push(`language status with the logs open: ${language}`);
    if (!language.includes('onnxlint')) {
        throw new Error(`no onnxlint language status item while the logs are open: ${language}`);
    }
    await page.keyboard.press('Escape');
    await openFile(page, 'plain/export_cfg.py');
    if (!said.includes('Set arguments...')) {
        throw new Error(`the end notification does not offer "Set arguments...": ${said}`);
    }
    // The quick fix on the finding at parse_args() (OLX812)
    await showProblems(page);
    const row = page.locator('.markers-panel .monaco-tl-row', { hasText: 'OLX812' }).first();
    await waitFor('the OLX812 row', async () => ((await row.isVisible().catch(() => false)) ? true : undefined), 30_000, () =>
        describeState(ctx),
    );
    await openProblem(page, row);
    await sleep(500);
    await page.keyboard.press('Control+.');
    const action = page
        .locator('.action-widget [role="option"], .context-view [role="menuitem"]')
        .filter({ hasText: 'Set the command-line arguments' })
        .first();
    await action.waitFor({ state: 'visible', timeout: 15_000 }).catch(async () => {
        const offered = await page.locator('.action-widget, .context-view').allInnerTexts();
        throw new Error(`no "Set arguments" quick fix: ${JSON.stringify(offered)}\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`quick fix: ${(await action.innerText()).trim()}`);
    await ctx.shot('set-arguments-menu');
    await action.click();
    const input = page.locator('.quick-input-widget input').first();
    await input.waitFor({ state: 'visible', timeout: 10_000 });
    const asked = (await page.locator('.quick-input-widget').first().innerText()).replace(/\s+/g, ' ');
    ctx.detail.push(`input box: ${asked}`);
    await input.fill('--config "configs/my net.yaml"');
    await ctx.shot('set-arguments-input');
    await page.keyboard.press('Enter');
    const entry = await waitFor(
        'the [[tool.onnxlint.scripts]] entry',
        () => {
            const text = fs.readFileSync(pyproject, 'utf8');
            return Promise.resolve(text.includes('argv = ["--config", "configs/my net.yaml"]') ? text : undefined);
        },
        15_000,
        async () => `${fs.readFileSync(pyproject, 'utf8')}\n${await describeState(ctx)}`,
    );
    ctx.detail.push(`pyproject.toml: ${entry.replace(/\n/g, '\\n')}`);
    // The same analysis again, which now runs past parse_args()
    const rerun = page.locator('.notifications-toasts .notification-toast', { hasText: /onnxlint: export_cfg\.py:\d+: / }).filter({
        hasNotText: 'Set arguments',
    });
    await rerun.first().waitFor({ state: 'visible', timeout: 300_000 }).catch(async () => {
        throw new Error(`no second analysis after "Set arguments..."\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`end of the run with arguments: ${(await rerun.first().innerText()).replace(/\s+/g, ' ')}`);
    await waitFor('the OLX812 gone', async () => {
        const rows = onnxlintRows(await problemRows(page));
        return rows.some((r) => r.includes('OLX812')) ? undefined : rows;
    }, 30_000, () => describeState(ctx));

    // "Create a target": filled from the call site, saved and analysed
    await openFile(page, 'plain/export_wide.py');
    const create = page.locator('.editor-group-container.active .codelens-decoration a', { hasText: 'No analysis target builds WideNet: create one' }).first();
    await create.waitFor({ state: 'visible', timeout: 60_000 }).catch(async () => {
        throw new Error(`no create-a-target lens: ${JSON.stringify(await lensTitles(page))}\n${await describeState(ctx)}`);
    });
    await create.click();
    const file = path.join(dir, 'export_wide.py');
    const saved = await waitFor('the target, saved', () => {
        const text = fs.readFileSync(file, 'utf8');
        return Promise.resolve(text.includes('# onnxlint: target') ? text : undefined);
    }, 20_000, () => describeState(ctx));
    const factory = saved.slice(saved.indexOf('# onnxlint: target'));
    ctx.detail.push(`factory on disk: ${factory.replace(/\n/g, '\\n')}`);
    if (!factory.includes('model = WideNet(width=8, classes=3).eval()') || !factory.includes('return model, (torch.randn(2, 4),)')) {
        throw new Error(`the factory does not take the call site's arguments: ${factory}`);
    }
    const dirty = await page.locator('.tabs-container .tab.active.dirty').count();
    if (dirty > 0) {
        throw new Error('the file with the new target is not saved');
    }
    const ran = toastWith(page, /onnxlint: export_wide:wide_net: /);
    await ran.waitFor({ state: 'visible', timeout: 300_000 }).catch(async () => {
        throw new Error(`the new target was not analysed\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`end of the new target's run: ${(await ran.innerText()).replace(/\s+/g, ' ')}`);
    await ctx.shot('created-target');
}

/** Restricted Mode: static diagnostics still appear, and deep analysis is refused with a clear message. */
async function scenarioUntrusted(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    // The status bar fills in after the window opens: wait for the indicator (a busy CI
    // machine once looked before it was drawn).
    const indicator = page.locator('.statusbar-item', { hasText: 'Restricted Mode' });
    const restricted = await waitFor(
        'the Restricted Mode indicator',
        async () => ((await indicator.count()) > 0 ? true : undefined),
        30_000,
    ).catch(() => false);
    ctx.detail.push(`restricted mode indicator: ${restricted}`);
    if (!restricted) {
        throw new Error('the workspace did not open in Restricted Mode, so this scenario tests nothing');
    }
    await waitForStaticDiagnostics(ctx);
    await runCommand(page, 'onnxlint: Analyze export');
    const message = await waitFor('the trust message', async () => {
        const found = (await notifications(page)).find((n) => n.includes(TRUST_MESSAGE));
        return found;
    }, 20_000, () => describeState(ctx));
    ctx.detail.push(`notification: ${message}`);
    await ctx.shot('untrusted');
}

/**
 * Issue 27, item 6: an interpreter without onnxlint (a bare venv; no onnxlint in any interpreter the
 * window knows): the onnxlint bundled with the .vsix runs with it, and the examples' squiggles appear,
 * with no prompt to install anything; the status item says which onnxlint runs.
 */
async function scenarioMissing(ctx: Ctx, interpreter: string): Promise<void> {
    const page = ctx.page;
    const rows = await waitForStaticDiagnostics(ctx);
    ctx.detail.push(`${rows.length} diagnostics with ${interpreter}, which has no onnxlint`);
    const prompts = (await notifications(page)).filter((n) => /not installed|failed|could not/.test(n));
    if (prompts.length > 0) {
        throw new Error(`a failure or install prompt although the bundled server runs: ${JSON.stringify(prompts)}`);
    }
    const log = extensionLog(ctx.server.userData, 10_000);
    const line = log.split('\n').find((l) => l.includes('the bundled onnxlint runs'));
    if (line === undefined) {
        throw new Error(`the log does not say the bundled onnxlint runs\n${log.slice(-3000)}`);
    }
    ctx.detail.push(`log: ${line.trim()}`);
    // The launcher's record is information, not an error (it was shown as one: issue 27).
    if (!line.includes('[info]')) {
        throw new Error(`the bundled server's INFO record is not at info level in the output channel: ${line.trim()}`);
    }
    ctx.detail.push(`language status: ${await languageStatusText(page)}`);
    await ctx.shot('missing');
}

/**
 * A server that fails its first start (the interpreter wrapper refuses until a flag file exists):
 * the failure is explained, and ONE "Restart server" then starts it.
 */
async function scenarioRestart(ctx: Ctx, flag: string): Promise<void> {
    const page = ctx.page;
    await openFile(page, ctx.ws.dynamoFile);
    const failed = toastWith(page, 'failed to start');
    await failed.waitFor({ state: 'visible', timeout: 60_000 }).catch(async () => {
        throw new Error(`no message about the failed start\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`notification: ${(await failed.innerText()).replace(/\s+/g, ' ')}`);
    await ctx.shot('restart-failed');
    await page.keyboard.press('Escape');
    fs.writeFileSync(flag, 'ok\n');
    await runCommand(page, 'onnxlint: Restart server');
    const rows = await waitFor(
        'diagnostics after one restart',
        async () => {
            const found = onnxlintRows(await problemRows(page));
            return found.length > 0 ? found : undefined;
        },
        60_000,
        () => describeState(ctx),
    );
    ctx.detail.push(`${rows.length} diagnostics after one Restart server`);
    const log = extensionLog(ctx.server.userData, 10_000);
    if (log.includes('restart failed')) {
        throw new Error(`the restart failed:\n${log.slice(-3000)}`);
    }
    await ctx.shot('restart');
}

/**
 * onnxlint importable but its server's dependencies missing: the bundled onnxlint runs instead, and
 * says why (the modules the interpreter lacks). Then an interpreter that is not a Python
 * (/bin/false) "could not be run".
 */
async function scenarioPartial(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    await waitForStaticDiagnostics(ctx);
    const log = extensionLog(ctx.server.userData, 10_000);
    const line = log.split('\n').find((l) => l.includes('the bundled onnxlint runs'));
    ctx.detail.push(`log: ${line?.trim() ?? ''}`);
    for (const module of ['pygls', 'lsprotocol', 'libcst']) {
        if (line?.includes(module) !== true) {
            throw new Error(`the log does not say the interpreter lacks ${module}: ${line ?? log.slice(-3000)}`);
        }
    }
    // No notification about it: the static checks work.
    const noise = (await notifications(page)).filter((n) => /couldn't create connection|failed|not installed/.test(n));
    if (noise.length > 0) {
        throw new Error(`a failure notification although the bundled server runs: ${JSON.stringify(noise)}`);
    }
    await ctx.shot('partial');
    await page.keyboard.press('Escape');
    await enterInterpreter(page, '/bin/false');
    const notPython = toastWith(page, 'could not be run');
    await notPython.waitFor({ state: 'visible', timeout: 60_000 }).catch(async () => {
        throw new Error(`no "could not be run" message for /bin/false\n${await describeState(ctx)}`);
    });
    const message = (await notPython.innerText()).replace(/\s+/g, ' ');
    ctx.detail.push(`notification: ${message}`);
    if (!message.includes('/bin/false') || message.includes('not installed')) {
        throw new Error(`wrong message for /bin/false: ${message}`);
    }
    await ctx.shot('not-python');
}

/** Through the UI, as a user would: Select interpreter > Enter a path (written to the workspace). */
async function enterInterpreter(page: Page, interpreter: string): Promise<void> {
    await runCommand(page, 'onnxlint: Select interpreter');
    const enter = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Enter a path or command' }).first();
    await enter.waitFor({ state: 'visible', timeout: 10_000 });
    await enter.click();
    const input = page.locator('.quick-input-widget input').first();
    await page.locator('.quick-input-widget', { hasText: 'Python interpreter' }).first().waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(interpreter);
    await page.keyboard.press('Enter');
}

/**
 * After the bundled server ran, pointing onnxlint.interpreter at an environment that has onnxlint
 * restarts the server by itself (once), with that environment's onnxlint, and the diagnostics appear.
 */
async function scenarioSwitch(ctx: Ctx, interpreter: string): Promise<void> {
    const page = ctx.page;
    await enterInterpreter(page, interpreter);
    ctx.detail.push(`onnxlint.interpreter -> ${interpreter} (Select interpreter, Enter a path)`);
    const workspaceSettings = path.join(ctx.ws.folder, '.vscode', 'settings.json');
    const written = (): boolean =>
        fs.existsSync(workspaceSettings) && fs.readFileSync(workspaceSettings, 'utf8').includes(interpreter);
    await waitFor('the setting written to the workspace', () => Promise.resolve(written() ? true : undefined), 10_000);
    ctx.detail.push(`written to ${workspaceSettings}`);
    // The diagnostics of the bundled server are there already: wait for the restarted one's start.
    await waitFor(
        `the server running in ${interpreter}`,
        () => Promise.resolve(extensionLog(ctx.server.userData, 10_000).includes(`running in ${interpreter}`) ? true : undefined),
        90_000,
        () => describeState(ctx),
    );
    const rows = await waitFor(
        'diagnostics from the restarted server',
        async () => {
            const found = onnxlintRows(await problemRows(ctx.page));
            return found.length > 0 ? found : undefined;
        },
        90_000,
        () => describeState(ctx),
    );
    ctx.detail.push(`${rows.length} diagnostics after the switch`);
    const starts = extensionLog(ctx.server.userData, 10_000)
        .split('\n')
        .filter((l) => l.includes(`interpreter (setting): ${interpreter}`)).length;
    ctx.detail.push(`server starts with the new interpreter: ${starts}`);
    if (starts !== 1) {
        throw new Error(`expected one restart with ${interpreter}, saw ${starts}\n${await describeState(ctx)}`);
    }
    await ctx.shot('switch');
}

// ---------------------------------------------------------------------------------------------

/** A notebook with a model cell, a Markdown cell and an export cell with `dynamo=False`. */
function writeNotebook(ws: Workspace): string {
    const cell = (source: string, n: number) => ({
        cell_type: 'code',
        execution_count: n,
        id: `cell-${n}`,
        metadata: {},
        outputs: [],
        source: source.split(/(?<=\n)/),
    });
    const notebook = {
        cells: [
            cell('import torch\nmodel = torch.nn.Linear(2, 2).eval()\nx = torch.randn(1, 2)', 1),
            { cell_type: 'markdown', id: 'md-1', metadata: {}, source: ['## Export'] },
            cell("torch.onnx.export(\n    model, (x,), 'model.onnx', dynamo=False\n)", 2),
        ],
        metadata: { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }, language_info: { name: 'python' } },
        nbformat: 4,
        nbformat_minor: 5,
    };
    const relative = 'export_notebook.ipynb';
    fs.writeFileSync(path.join(ws.folder, relative), `${JSON.stringify(notebook, null, 1)}\n`);
    return relative;
}

/**
 * Per cell of the notebook on screen (by its index in the notebook), its text and whether it shows
 * a squiggle. Only its rows are visible: a notebook open in another tab keeps its rows, hidden.
 */
async function notebookCells(page: Page): Promise<{ index: number; text: string; squiggles: number }[]> {
    const rows = page.locator('.notebook-editor .cell-list-container .monaco-list-row:visible');
    const out: { index: number; text: string; squiggles: number }[] = [];
    for (let i = 0; i < (await rows.count()); i++) {
        const row = rows.nth(i);
        const index = Number(await row.getAttribute('data-index'));
        const editor = row.locator('.monaco-editor .view-lines');
        const text = (await editor.count()) > 0 ? await editor.first().innerText() : '';
        const squiggles = await row.locator('.squiggly-warning, .squiggly-error').count();
        out.push({ index, text: text.replace(/\u00a0/g, ' '), squiggles });
    }
    return out.sort((a, b) => a.index - b.index);
}

/**
 * A Jupyter notebook (VS Code's built-in ipynb support, no kernel): the `dynamo=False` squiggle is
 * in the export cell (the third cell, line 2 of it), no other cell has one, and the quick fix,
 * applied there, turns it into `dynamo=True` and the squiggle goes away.
 */
async function scenarioNotebook(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const notebook = writeNotebook(ctx.ws);
    await openFile(page, notebook);
    const cells = await waitFor(
        'a squiggle in a notebook cell',
        async () => {
            const found = await notebookCells(page);
            return found.some((c) => c.squiggles > 0) ? found : undefined;
        },
        90_000,
        () => describeState(ctx),
    );
    ctx.detail.push(...cells.map((c) => `cell ${c.index + 1}: ${c.squiggles} squiggle(s)`));
    const marked = cells.filter((c) => c.squiggles > 0).map((c) => c.index);
    if (marked.length !== 1 || marked[0] !== 2) {
        throw new Error(`the squiggle should be in cell 3 only, it is in cells ${JSON.stringify(marked.map((i) => i + 1))}`);
    }
    const rows = await waitFor(
        'the OLX401 problem of the notebook',
        async () => {
            const found = onnxlintRows(await problemRows(page)).filter((r) => r.includes('OLX401'));
            return found.length > 0 ? found : undefined;
        },
        30_000,
        () => describeState(ctx),
    );
    ctx.detail.push(...rows.map((r) => `problem: ${r}`));
    if (!rows.some((r) => r.includes('[Ln 2, Col 32]'))) {
        throw new Error(`the OLX401 problem is not at line 2, column 32 of its cell: ${JSON.stringify(rows)}`);
    }
    // the cell's row (export.py, open in another tab, has an OLX401 too)
    await openProblem(page, page.locator('.markers-panel .monaco-tl-row', { hasText: 'OLX401' }).filter({ hasText: '[Ln 2, Col 32]' }).first());
    await sleep(500);
    await page.keyboard.press('Control+.');
    const action = page
        .locator('.action-widget [role="option"], .context-view [role="menuitem"]')
        .filter({ hasText: 'OLX401' })
        .filter({ hasNotText: /suppress|documentation|fix all/i })
        .first();
    await action.waitFor({ state: 'visible', timeout: 15_000 }).catch(async (e: unknown) => {
        throw new Error(`no dynamo quick fix offered in the cell (${String(e)})\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`quick fix offered: ${(await action.innerText()).trim()}`);
    await ctx.shot('notebook-quickfix-menu');
    await action.click();
    const fixed = await waitFor(
        'dynamo=True in the export cell and no squiggle left',
        async () => {
            const now = await notebookCells(page);
            const exportCell = now.find((c) => c.index === 2);
            return exportCell !== undefined && /dynamo\s*=\s*True/.test(exportCell.text) && now.every((c) => c.squiggles === 0)
                ? now
                : undefined;
        },
        30_000,
        async () => `${JSON.stringify(await notebookCells(page))}\n${await describeState(ctx)}`,
    );
    ctx.detail.push(`export cell after the fix: ${fixed.find((c) => c.index === 2)?.text.replace(/\n/g, ' / ') ?? ''}`);
    await ctx.shot('notebook');
}

/**
 * Brings the active notebook's cell `index` (0-based, Markdown cells counted) into view the way a
 * keyboard user does: command mode (Escape out of a cell's editor), Ctrl+Home to the first cell, then
 * Down once per cell; the notebook reveals each cell it focuses. The notebook's list draws a cell's
 * editor, and so its code lenses, only once the cell is near the viewport: the server answers the
 * export cell's codeLens request at once, but VS Code draws its lens only when the cell is in view.
 * Done when the status bar says "Cell N of M" and the cell's row, editor text included, is drawn
 * inside the editor group's box.
 */
async function revealCell(page: Page, index: number): Promise<void> {
    // The notebook's widget is not inside its editor group's element (VS Code lays it over the
    // group), and a notebook in another tab keeps its rows, hidden: the visible rows are this one's.
    const rows = page.locator(`${VISIBLE_NOTEBOOK} .cell-list-container .monaco-list-row:visible`);
    const row = rows.and(page.locator(`[data-index="${index}"]`)).first();
    const position = page.locator('.statusbar-item', { hasText: /^Cell \d+ of \d+$/ }).first();
    let attempt = 0;
    let boxes = '';
    await waitFor(
        `cell ${index + 1} in view`,
        async () => {
            attempt++;
            // A click into the first drawn cell's editor, then Escape: the notebook list has the
            // focus, in command mode, where Ctrl+Home / Down move between cells.
            const first = rows.locator('.monaco-editor .view-lines').first();
            await first.click({ timeout: 5_000 }).catch(() => undefined);
            await page.keyboard.press('Escape');
            await page.keyboard.press('Control+Home');
            for (let i = 0; i < index; i++) {
                await page.keyboard.press('ArrowDown');
                await sleep(100);
            }
            await sleep(500 * attempt);
            const where = (await position.innerText().catch(() => '')).trim();
            if (/^Cell (\d+) of/.exec(where)?.[1] !== String(index + 1) || (await row.count()) === 0) {
                return undefined;
            }
            // Inside the editor group's box, which is the part of the notebook on screen (the list's
            // own containers are as tall as all their rows).
            const group = await page.locator('.editor-group-container.active').first().boundingBox();
            const at = await row.boundingBox();
            const text = await row.locator('.monaco-editor .view-lines').first().innerText().catch(() => '');
            boxes = `cell ${JSON.stringify(at)} in group ${JSON.stringify(group)}`;
            const seen = group !== null && at !== null && text.trim() !== '' && at.y >= group.y && at.y + at.height <= group.y + group.height;
            return seen ? true : undefined;
        },
        30_000,
        async () =>
            `status bar: ${await position.innerText().catch(() => '(no cell position)')}; ${boxes}; rows drawn: ${JSON.stringify(await notebookCells(page))}`,
    );
}

/** tests/server/test_deep_notebook.py's notebook: magics, the model with a tensor `if`, its export. */
const DEEP_MODEL_CELL = `class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        else:
            y = y - 1
        return y
`;
const DEEP_CELLS: [string, string][] = [
    ['code', '%matplotlib inline\n!pip install onnx\nimport torch\n'],
    ['markdown', '## The model'],
    ['code', DEEP_MODEL_CELL],
    ['code', 'model = M().eval()\ntorch.onnx.export(model, (torch.randn(3, 4),), "m.onnx", dynamo=True)\n'],
];

/** The sources of a notebook's cells, as saved (a list of lines or one string). */
function cellSources(file: string): string[] {
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { cells: { source: string | string[] }[] };
    return data.cells.map((c) => (Array.isArray(c.source) ? c.source.join('') : c.source).replace(/\n$/, ''));
}

/**
 * Issue 29 in a notebook: the "Analyze export" lens on the export cell runs the notebook's code cells
 * as one script; the deep finding shows in the model's cell; the proven torch.where quick fix,
 * applied there, rewrites that cell (and no other), and the next analysis of the saved notebook is
 * clean.
 */
async function scenarioDeepNotebook(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    const cells = DEEP_CELLS.map(([kind, source], n) =>
        kind === 'code'
            ? { cell_type: 'code', execution_count: null, id: `c${n}`, metadata: {}, outputs: [], source: source.split(/(?<=\n)/) }
            : { cell_type: 'markdown', id: `m${n}`, metadata: {}, source: [source] },
    );
    const notebook = {
        cells,
        metadata: { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }, language_info: { name: 'python' } },
        nbformat: 4,
        nbformat_minor: 5,
    };
    const file = path.join(writeProject(ctx, 'deepnb', { 'export_deep.ipynb': `${JSON.stringify(notebook, null, 1)}\n` }), 'export_deep.ipynb');
    await openFile(page, 'deepnb/export_deep.ipynb');
    const lens = 'Analyze export (M, dynamo exporter: runs this notebook)';
    await revealCell(page, 3);
    await analyzeByLens(ctx, lens, /onnxlint: export_deep\.ipynb:cell 4:2: .*finding/, VISIBLE_NOTEBOOK);
    // The deep OLX802 at the `if` is folded into the static OLX101 there (one cause, one
    // diagnostic), whose message then says the deep analysis confirmed it: before the analysis
    // the row is the static one alone.
    const confirmed = await waitFor(
        'the deep finding at the if of the model cell (cell 3, line 8)',
        async () => {
            const rows = (await problemsByFile(page, 'export_deep')).filter((r) => r.file.includes('export_deep.ipynb'));
            const row = rows.find((r) => r.row.includes('OLX101') && r.row.includes('[Ln 8, Col 12]') && r.row.includes('deep analysis'));
            return row !== undefined ? row.row : undefined;
        },
        60_000,
        () => describeState(ctx),
    );
    ctx.detail.push(`deep problem: ${confirmed}`);
    const marked = await waitFor(
        'the squiggle in the model cell',
        async () => {
            const found = await notebookCells(page);
            return found.some((c) => c.index === 2 && c.squiggles > 0) ? found : undefined;
        },
        30_000,
        async () => `${JSON.stringify(await notebookCells(page))}\n${await describeState(ctx)}`,
    );
    ctx.detail.push(...marked.map((c) => `cell ${c.index + 1}: ${c.squiggles} squiggle(s)`));
    // The proof runs after the findings are shown: ask for the quick fixes at the `if` (the cell's
    // line 8, from its row in the Problems panel) until the proven rewrite is offered.
    const action = await waitForProvenWhere(ctx, 'the proven torch.where quick fix in the model cell', async () => {
        const row = page.locator('.markers-panel .monaco-tl-row', { hasText: 'OLX101' }).filter({ hasText: '[Ln 8, Col 12]' }).first();
        if (!(await row.isVisible().catch(() => false))) {
            await page.keyboard.press('Control+Shift+M');
            await sleep(1_000);
            return false;
        }
        await openProblem(page, row);
        await sleep(500);
        return true;
    });
    await ctx.shot('deepnotebook-menu');
    await action.click();
    await waitFor(
        'torch.where in the model cell',
        async () => ((await notebookCells(page)).find((c) => c.index === 2)?.text.includes('torch.where(') ? true : undefined),
        30_000, // the suite's other tests load the machine beside it (-n 2): 15 s once ran out
        async () => JSON.stringify(await notebookCells(page)),
    );
    await page.keyboard.press('Control+S');
    const want = DEEP_CELLS.map(([, source]) => source.replace(/\n$/, ''));
    want[2] = fixedScript(DEEP_MODEL_CELL).replace(/\n$/, '');
    await waitFor(
        'the fixed notebook saved, only the model cell changed',
        () => Promise.resolve(JSON.stringify(cellSources(file)) === JSON.stringify(want) ? true : undefined),
        15_000,
        () => Promise.resolve(`on disk: ${JSON.stringify(cellSources(file))}\nwanted: ${JSON.stringify(want)}`),
    );
    ctx.detail.push('applied and saved: the if/else (4 lines) became one torch.where line in cell 3, nothing else changed');
    await revealCell(page, 3);
    await analyzeByLens(ctx, lens, /onnxlint: export_deep\.ipynb:cell 4:2: ok, no findings/, VISIBLE_NOTEBOOK);
    // Clean: no finding of the if (static or deep) and no deep finding left in the notebook, and
    // no squiggle in the cells on screen.
    const left = await waitFor(
        'no finding of the if, and no deep finding, left in export_deep.ipynb',
        async () => {
            const rows = (await problemsByFile(page, 'export_deep')).filter((r) => r.file.includes('export_deep.ipynb'));
            const now = await notebookCells(page);
            const clean = !rows.some((r) => /OLX101|OLX8\d\d|deep analysis/.test(r.row)) && now.every((c) => c.squiggles === 0);
            return clean ? { rows, now } : undefined;
        },
        30_000,
        async () => `${JSON.stringify(await notebookCells(page))}\n${await describeState(ctx)}`,
    );
    ctx.detail.push(`problems left in export_deep.ipynb: ${JSON.stringify(left.rows.map((r) => r.row))}`);
    ctx.detail.push(`squiggles in the cells on screen: ${JSON.stringify(left.now.map((c) => [c.index + 1, c.squiggles]))}`);
    await ctx.shot('deepnotebook');
}

async function main(): Promise<number> {
    const opts = parseArgs(process.argv.slice(2));
    fs.rmSync(opts.artifacts, { recursive: true, force: true });
    fs.mkdirSync(opts.artifacts, { recursive: true });
    const results: Partial<Record<Scenario, Result>> = {};
    const resultsFile = path.join(opts.artifacts, 'results.json');
    const save = (): void => {
        fs.writeFileSync(resultsFile, JSON.stringify(results, null, 2));
    };
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'onnxlint-e2e-'));
    const extensionsDir = path.join(opts.artifacts, 'extensions');
    fs.mkdirSync(extensionsDir, { recursive: true });
    installExtension(opts, extensionsDir);
    console.log(`installed ${opts.vsix}`);
    const goodPython = makeVenvWithOnnxlint(opts, path.join(tmp, 'venv-onnxlint'));
    const bare = opts.only.has('missing') || opts.only.has('switch') ? makeBareVenv(opts, path.join(tmp, 'venv-bare')) : '';
    const ws = makeWorkspace(opts, tmp);
    console.log(`workspace ${ws.folder}: dynamo=False in ${ws.dynamoFile}, deep analysis on ${ws.deepFile}`);

    const baseSettings = {
        'workbench.startupEditor': 'none',
        'chat.disableAIFeatures': true,
        'workbench.tips.enabled': false,
        'extensions.ignoreRecommendations': true,
        'terminal.integrated.gpuAcceleration': 'off', // the DOM renderer, so the test can read the terminal
        'window.title': 'onnxlint e2e',
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
    };
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });

    const session = async (
        name: string,
        scenarios: { scenario: Scenario; run: (ctx: Ctx) => Promise<void> }[],
        settings: Record<string, unknown>,
    ): Promise<void> => {
        const wanted = scenarios.filter((s) => opts.only.has(s.scenario));
        if (wanted.length === 0) {
            return;
        }
        fs.mkdirSync(path.join(opts.artifacts, name), { recursive: true });
        const server = await startCodeServer(opts, name, extensionsDir, { ...baseSettings, ...settings }, ws.folder);
        try {
            const page = await openWorkbench(browser, server, ws.folder);
            for (const { scenario, run } of wanted) {
                const started = Date.now();
                const detail: string[] = [];
                const ctx: Ctx = {
                    opts,
                    page,
                    ws,
                    server,
                    detail,
                    shot: async (shot) => {
                        await page.screenshot({ path: path.join(opts.artifacts, `${shot}.png`) });
                        // With --screenshot, the README's images are refreshed too (next to it).
                        const readme = README_SHOTS[shot];
                        if (opts.screenshot !== undefined && readme !== undefined) {
                            fs.copyFileSync(path.join(opts.artifacts, `${shot}.png`), path.join(path.dirname(opts.screenshot), readme));
                        }
                    },
                };
                let r: Result;
                try {
                    await run(ctx);
                    r = { status: 'passed', seconds: (Date.now() - started) / 1000, detail };
                } catch (error) {
                    await ctx.shot(`failed-${scenario}`).catch(() => undefined);
                    r = {
                        status: 'failed',
                        seconds: (Date.now() - started) / 1000,
                        detail,
                        error: error instanceof Error ? error.message : String(error),
                    };
                }
                results[scenario] = r;
                const error = r.error !== undefined ? `\n  ${r.error.split('\n').join('\n  ')}` : '';
                console.log(`${scenario}: ${r.status} (${r.seconds.toFixed(1)}s)${error}`);
                for (const line of detail) {
                    console.log(`  ${line}`);
                }
                save();
                await page.keyboard.press('Escape').catch(() => undefined);
            }
            await page.close();
        } finally {
            await server.stop();
        }
    };

    try {
        await session(
            'trusted',
            [
                { scenario: 'static', run: scenarioStatic },
                { scenario: 'deepstart', run: scenarioDeepStart },
                { scenario: 'lens', run: scenarioLens },
                { scenario: 'quickfix', run: scenarioQuickFix },
                { scenario: 'notebook', run: scenarioNotebook },
                { scenario: 'deep', run: scenarioDeep },
                { scenario: 'script', run: scenarioScript },
                { scenario: 'deepfix', run: scenarioDeepFix },
                { scenario: 'deepnotebook', run: scenarioDeepNotebook },
                { scenario: 'setup', run: scenarioSetup },
            ],
            // Message traces make a failure's log tail say what the client and server exchanged.
            // A dark theme, as most ML developers use: the report must read in it (issue 27).
            {
                'security.workspace.trust.enabled': false,
                'onnxlint.interpreter': [goodPython],
                'onnxlint.trace.server': 'messages',
                'workbench.colorTheme': 'Default Dark Modern',
            },
        );
        await session(
            'untrusted',
            [{ scenario: 'untrusted', run: scenarioUntrusted }],
            {
                'security.workspace.trust.enabled': true,
                'security.workspace.trust.startupPrompt': 'never',
                'security.workspace.trust.banner': 'never',
                // A user setting, which an untrusted workspace cannot override.
                'onnxlint.interpreter': [goodPython],
            },
        );
        await session(
            'missing',
            [
                { scenario: 'missing', run: (ctx) => scenarioMissing(ctx, bare) },
                { scenario: 'switch', run: (ctx) => scenarioSwitch(ctx, goodPython) },
            ],
            { 'security.workspace.trust.enabled': false, 'onnxlint.interpreter': [bare] },
        );
        // The switch scenario wrote onnxlint.interpreter into the workspace; the next windows start clean.
        fs.rmSync(path.join(ws.folder, '.vscode'), { recursive: true, force: true });
        if (opts.only.has('restart')) {
            const flag = path.join(tmp, 'server-may-start');
            const flaky = writeScript(
                path.join(tmp, 'flaky-python'),
                // The server starts as `-m onnxlint server` or through the bundled launcher (bundled/tool/server.py).
                `case " $* " in *" -m onnxlint server"*|*"/bundled/tool/server.py"*) if [ ! -e '${flag}' ]; then echo 'simulated start failure' >&2; exit 3; fi;; esac\nexec '${goodPython}' "$@"`,
            );
            await session('restart', [{ scenario: 'restart', run: (ctx) => scenarioRestart(ctx, flag) }], {
                'security.workspace.trust.enabled': false,
                'onnxlint.interpreter': [flaky],
            });
        }
        if (opts.only.has('partial')) {
            // onnxlint from the checkout, but no site-packages: pygls, lsprotocol and libcst are missing.
            const partial = writeScript(
                path.join(tmp, 'partial-python'),
                `PYTHONPATH='${opts.repo}' exec '${opts.python}' -S "$@"`,
            );
            fs.rmSync(path.join(ws.folder, '.vscode'), { recursive: true, force: true });
            await session('partial', [{ scenario: 'partial', run: scenarioPartial }], {
                'security.workspace.trust.enabled': false,
                'onnxlint.interpreter': [partial],
            });
        }
    } finally {
        await browser.close();
        fs.rmSync(tmp, { recursive: true, force: true });
        save();
    }
    const failed = Object.entries(results).filter(([, r]) => r.status === 'failed');
    console.log(`e2e: ${Object.keys(results).length - failed.length} passed, ${failed.length} failed; results in ${resultsFile}`);
    return failed.length === 0 ? 0 : 1;
}

main().then(
    (code) => {
        process.exitCode = code;
    },
    (error: unknown) => {
        console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
        process.exitCode = 2;
    },
);
