// End-to-end test in a real VS Code: packages nothing itself; installs the given .vsix into code-server,
// drives it with headless Chromium (playwright-core) and checks what a person would see.
//
//   node out/e2e/run.js --vsix onnxlint.vsix [--python python3] [--only static,quickfix,...]
//       [--examples DIR] [--deep-file REL] [--screenshot docs/images/vscode.png] [--artifacts DIR]
//
// Scenarios: static, quickfix, deep (one trusted window), untrusted, missing then switch (one window).
// Results go to
// <artifacts>/results.json (read by tests/extension/test_e2e.py), with a screenshot per scenario.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { TRUST_MESSAGE } from '../../src/commands';

const SCENARIOS = ['static', 'quickfix', 'deep', 'untrusted', 'missing', 'switch'] as const;
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

/** A venv that sees the base interpreter's packages (torch) and this checkout's onnxlint, like a dev install. */
function makeVenvWithOnnxlint(opts: Options, dir: string): string {
    execFileSync(opts.python, ['-m', 'venv', '--system-site-packages', '--without-pip', dir]);
    const python = venvPython(dir);
    const site = execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], {
        encoding: 'utf8',
    }).trim();
    fs.writeFileSync(path.join(site, 'onnxlint-checkout.pth'), `${opts.repo}\n`);
    const version = execFileSync(python, ['-c', 'import onnxlint; print(onnxlint.__version__)'], {
        encoding: 'utf8',
        cwd: os.tmpdir(),
    }).trim();
    console.log(`venv with onnxlint ${version}: ${python}`);
    return python;
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
    const out = execFileSync(
        bin,
        ['--extensions-dir', extensionsDir, '--user-data-dir', path.join(extensionsDir, '..', 'install-user-data'), '--install-extension', opts.vsix, '--force'],
        { env: codeServerEnv(nodeBin), encoding: 'utf8' },
    );
    if (!/successfully installed/i.test(out)) {
        throw new Error(`installing ${opts.vsix} failed:\n${out}`);
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
    await page.keyboard.press('Enter');
}

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

async function describeState(ctx: Ctx): Promise<string> {
    const rows = await problemRows(ctx.page).catch(() => []);
    return [
        `problems: ${JSON.stringify(rows)}`,
        `notifications: ${JSON.stringify(await notifications(ctx.page).catch(() => []))}`,
        `status bar: ${await statusBar(ctx.page).catch(() => '')}`,
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

/** Diagnostics appear in the Problems panel with their codes, including the dynamo=False one. */
async function scenarioStatic(ctx: Ctx): Promise<void> {
    const rows = await waitForStaticDiagnostics(ctx);
    const dynamoRow = rows.find((r) => /dynamo\s*=\s*False/.test(r));
    if (dynamoRow === undefined) {
        throw new Error(`no diagnostic about dynamo=False among ${JSON.stringify(rows)}`);
    }
    if (!/OLX4\d\d/.test(dynamoRow)) {
        throw new Error(`the dynamo=False diagnostic has no OLX4xx code: ${dynamoRow}`);
    }
    const status = await waitFor('the status item to show the server running', async () => {
        const text = await statusBar(ctx.page);
        return text.includes('onnxlint') ? text : undefined;
    }, 10_000);
    ctx.detail.push(`status bar: ${status}`);
    await ctx.shot('static');
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
    await page.locator('.markers-panel .monaco-tl-row', { hasText: code }).first().dblclick();
    await sleep(500);
    await page.keyboard.press('Control+.');
    // The fix for this code, not the "Suppress" action next to it.
    const action = page
        .locator('.action-widget [role="option"], .context-view [role="menuitem"]')
        .filter({ hasText: code })
        .filter({ hasNotText: /suppress/i })
        .first();
    await action.waitFor({ state: 'visible', timeout: 15_000 }).catch(async (e: unknown) => {
        const offered = await page.locator('.action-widget, .context-view').evaluateAll((els) => els.map((el) => el.outerHTML.slice(0, 4000)));
        throw new Error(`no dynamo quick fix offered (${String(e)}); menu: ${JSON.stringify(offered)}\n${await describeState(ctx)}`);
    });
    ctx.detail.push(`quick fix offered: ${(await action.innerText()).trim()}`);
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
}

/** "Analyze export" runs the deep analysis and its diagnostics reach the Problems panel. */
async function scenarioDeep(ctx: Ctx): Promise<void> {
    const page = ctx.page;
    await openFile(page, ctx.ws.deepFile);
    await waitFor('static diagnostics first', async () => {
        const rows = onnxlintRows(await problemRows(page));
        return rows.length > 0 ? rows : undefined;
    }, 90_000, () => describeState(ctx));
    await sleep(1000);
    const before = new Set(onnxlintRows(await problemRows(page)));
    const started = Date.now();
    await runCommand(page, 'onnxlint: Analyze export');
    // With several "Analyze export" lenses in the file the extension asks which; take the first offered.
    const pick = page.locator('.quick-input-widget', { hasText: 'analyze the export of' });
    if (await pick.waitFor({ state: 'visible', timeout: 3_000 }).then(() => true, () => false)) {
        ctx.detail.push(`picked: ${(await pick.locator('.monaco-list-row').first().innerText()).replace(/\s+/g, ' ')}`);
        await page.keyboard.press('Enter');
    }
    let sawAnalyzing = false;
    const added = await waitFor(
        'OLX8xx diagnostics from the deep analysis',
        async () => {
            if (/analyzing/i.test(await statusBar(page))) {
                sawAnalyzing = true;
            }
            const errors = (await notifications(page)).filter((n) => /onnxlint/i.test(n) && /(fail|error|cannot|crash)/i.test(n));
            if (errors.length > 0) {
                throw new Error(`the analysis reported an error: ${JSON.stringify(errors)}\n${await describeState(ctx)}`);
            }
            // Deep findings carry OLX8xx codes; static ones never do.
            const fresh = onnxlintRows(await problemRows(page)).filter((r) => !before.has(r) && /OLX8\d\d/.test(r));
            return fresh.length > 0 ? fresh : undefined;
        },
        360_000,
        () => describeState(ctx),
    );
    ctx.detail.push(`deep analysis took ${((Date.now() - started) / 1000).toFixed(1)}s; status showed analyzing: ${sawAnalyzing}`);
    ctx.detail.push(...added.map((r) => `deep problem: ${r}`));
    await ctx.shot('deep');
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

/** An interpreter without onnxlint: a notification offers to install it (showing the command) or pick another. */
async function scenarioMissing(ctx: Ctx, interpreter: string): Promise<void> {
    const page = ctx.page;
    await openFile(page, ctx.ws.dynamoFile);
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'onnxlint is not installed in' }).first();
    await toast.waitFor({ state: 'visible', timeout: 60_000 }).catch(async () => {
        throw new Error(`no install prompt\n${await describeState(ctx)}`);
    });
    const text = (await toast.innerText()).replace(/\s+/g, ' ');
    ctx.detail.push(`notification: ${text}`);
    if (!text.includes(interpreter)) {
        throw new Error(`the prompt does not name the interpreter ${interpreter}: ${text}`);
    }
    const buttons = (await toast.locator('.monaco-button').allInnerTexts()).map((b) => b.trim());
    ctx.detail.push(`buttons: ${JSON.stringify(buttons)}`);
    for (const wanted of ['Install', 'Select Interpreter']) {
        if (!buttons.includes(wanted)) {
            throw new Error(`the prompt has no "${wanted}" button: ${JSON.stringify(buttons)}`);
        }
    }
    await ctx.shot('missing');
    // Install runs pip in a visible terminal, so the user sees the exact command.
    await toast.locator('.monaco-button', { hasText: 'Install' }).first().click();
    const expected = `${interpreter} -m pip install onnxlint`;
    const terminal = await waitFor('the install command in a terminal', async () => {
        const rows = await page.locator('.terminal-wrapper .xterm-rows, .xterm .xterm-rows').allInnerTexts().catch(() => []);
        const all = rows.join('\n');
        return all.includes(expected) ? all : undefined;
    }, 30_000, async () => `terminal: ${JSON.stringify(await page.locator('.xterm-rows').allInnerTexts().catch(() => []))}`);
    ctx.detail.push(`terminal shows: ${terminal.split('\n').find((l) => l.includes(expected))?.trim() ?? ''}`);
    await ctx.shot('missing-install');
}

/**
 * After the install prompt, pointing onnxlint.interpreter at an environment that has onnxlint
 * restarts the server by itself (once), and the diagnostics appear.
 */
async function scenarioSwitch(ctx: Ctx, interpreter: string): Promise<void> {
    const page = ctx.page;
    // Through the UI, as a user would: Select interpreter > Enter a path.
    await runCommand(page, 'onnxlint: Select interpreter');
    const enter = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Enter a path or command' }).first();
    await enter.waitFor({ state: 'visible', timeout: 10_000 });
    await enter.click();
    const input = page.locator('.quick-input-widget input').first();
    await page.locator('.quick-input-widget', { hasText: 'Python interpreter' }).first().waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(interpreter);
    await page.keyboard.press('Enter');
    ctx.detail.push(`onnxlint.interpreter -> ${interpreter} (Select interpreter, Enter a path)`);
    const workspaceSettings = path.join(ctx.ws.folder, '.vscode', 'settings.json');
    const written = (): boolean =>
        fs.existsSync(workspaceSettings) && fs.readFileSync(workspaceSettings, 'utf8').includes(interpreter);
    await waitFor('the setting written to the workspace', () => Promise.resolve(written() ? true : undefined), 10_000);
    ctx.detail.push(`written to ${workspaceSettings}`);
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
                { scenario: 'quickfix', run: scenarioQuickFix },
                { scenario: 'deep', run: scenarioDeep },
            ],
            // Message traces make a failure's log tail say what the client and server exchanged.
            { 'security.workspace.trust.enabled': false, 'onnxlint.interpreter': [goodPython], 'onnxlint.trace.server': 'messages' },
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
