// Renders extension/icon.svg to extension/icon.png (128x128, the Marketplace's size) with the
// Chromium the end-to-end test uses:  node extension/scripts/icon.mjs
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..');
const svg = readFileSync(join(dir, 'icon.svg'), 'utf8');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'], headless: true });
const page = await browser.newPage({ viewport: { width: 128, height: 128 } });
await page.setContent(`<html><body style="margin:0;background:transparent">${svg}</body></html>`);
await page.locator('svg').screenshot({ path: join(dir, 'icon.png'), omitBackground: true });
await browser.close();
