// Renders an HTML report in headless Chromium (playwright-core, /usr/bin/chromium) as a VS Code
// webview shows it, or as a browser shows the file, and prints, as JSON, the contrast of every piece
// of text against the background it is drawn on (tests/extension/test_report_theme.py asserts on it;
// the e2e reads the same figures back from the real webview).
//   node out/e2e/report-colors.js REPORT.html THEME.json SCREENSHOT.png
// THEME.json: {"vars": {"--vscode-editor-background": "#1f1f1f", ...}, "bodyClass": "vscode-dark",
// "colorScheme": "dark" | "light"}. With "vars", the page gets them on <html> and VS Code's own
// webview defaults (the body's colour and background from them), as VS Code's webview does.
import * as fs from 'node:fs';
import { chromium } from 'playwright-core';
import { contrastProbe } from './contrast';

interface Theme {
    vars?: Record<string, string>;
    bodyClass?: string;
    colorScheme?: 'dark' | 'light';
}

async function main(): Promise<void> {
    const [file, themeFile, screenshot] = process.argv.slice(2);
    if (file === undefined || themeFile === undefined) {
        throw new Error('usage: report-colors.js REPORT.html THEME.json [SCREENSHOT.png]');
    }
    const theme = JSON.parse(fs.readFileSync(themeFile, 'utf8')) as Theme;
    const browser = await chromium.launch({
        executablePath: '/usr/bin/chromium',
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    try {
        const page = await browser.newPage({ viewport: { width: 1100, height: 1400 }, colorScheme: theme.colorScheme ?? 'light' });
        let html = fs.readFileSync(file, 'utf8');
        if (theme.vars !== undefined) {
            const style = Object.entries(theme.vars)
                .map(([k, v]) => `${k}: ${v};`)
                .join(' ');
            // What VS Code's webview adds itself (its pre/index.html default styles).
            const defaults =
                '<style>body{background-color:var(--vscode-editor-background);color:var(--vscode-editor-foreground);' +
                'font-family:var(--vscode-font-family)}a{color:var(--vscode-textLink-foreground)}' +
                'code{color:var(--vscode-textPreformat-foreground)}</style>';
            html = html
                .replace('<html lang="en">', `<html lang="en" style="${style}">`)
                .replace('<head>', `<head>${defaults}`)
                .replace('<body>', `<body class="${theme.bodyClass ?? ''}">`);
        }
        await page.setContent(html);
        const seen = await page.evaluate(contrastProbe);
        if (screenshot !== undefined) {
            await page.screenshot({ path: screenshot, fullPage: true });
        }
        console.log(JSON.stringify(seen));
    } finally {
        await browser.close();
    }
}

main().catch((error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 2;
});
