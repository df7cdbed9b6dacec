// Opens one page of the built docs site in headless Chromium (playwright-core, /usr/bin/chromium)
// and prints, as JSON, what a reader sees: tests/docs/test_site.py asserts on it.
//   node tests/docs/browse.mjs URL SCREENSHOT.png
// Every request that is not to the page's own host is aborted and listed in `outside`.
import { chromium } from 'playwright-core';

const [url, screenshot] = process.argv.slice(2);
const own = new URL(url).host;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
});
const seen = { outside: [], failed: [], errors: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.route('**/*', (route) => {
    const target = new URL(route.request().url());
    if (target.protocol === 'data:' || target.host === own) {
      return route.continue();
    }
    seen.outside.push(route.request().url());
    return route.abort();
  });
  page.on('requestfailed', (r) => {
    if (new URL(r.url()).host === own) {
      seen.failed.push(`${r.url()}: ${r.failure()?.errorText}`);
    }
  });
  page.on('response', (r) => {
    if (r.status() >= 400) {
      seen.failed.push(`${r.url()}: HTTP ${r.status()}`);
    }
  });
  page.on('console', (m) => {
    if (m.type() === 'error') {
      seen.errors.push(m.text());
    }
  });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  const response = await page.goto(url, { waitUntil: 'networkidle' });
  seen.status = response.status();
  seen.title = await page.title();
  Object.assign(
    seen,
    await page.evaluate(() => {
      const sections = {};
      for (const section of document.querySelectorAll('article section')) {
        const heading = section.querySelector(':scope > h2');
        const pre = section.querySelector('pre');
        if (!heading || !pre) {
          continue;
        }
        const box = pre.getBoundingClientRect();
        const style = getComputedStyle(pre);
        sections[heading.textContent.replace(/[#¶]/g, '').trim()] = {
          code: pre.textContent,
          visible: box.width > 200 && box.height > 10 && style.visibility === 'visible' && style.display !== 'none',
          highlighted: pre.querySelectorAll('span[class]').length,
          monospace: /mono|courier|consol/i.test(style.fontFamily),
        };
      }
      return {
        h1: document.querySelector('article h1')?.textContent.replace(/[#¶]/g, '').trim(),
        sections,
        stylesheets: [...document.styleSheets].filter((s) => s.cssRules.length > 0).length,
        sidebar_rules: [...document.querySelectorAll('.sidebar-tree a')].filter((a) => /^OLX\d{3}:/.test(a.textContent.trim())).length,
      };
    }),
  );
  await page.screenshot({ path: screenshot, fullPage: true });
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
