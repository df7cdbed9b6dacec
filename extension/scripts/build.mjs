// Bundles the extension (and its tests) with esbuild.
//   node extension/scripts/build.mjs               dist/extension.js (with a source map)
//   node extension/scripts/build.mjs --production  dist/extension.js, minified, no source map (what the .vsix ships)
//   node extension/scripts/build.mjs --tests       out/test/*.test.js (unit tests, run by node --test)
//   node extension/scripts/build.mjs --e2e         out/e2e/run.js (the code-server end-to-end test), out/e2e/report-colors.js
//   node extension/scripts/build.mjs --watch
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = new Set(process.argv.slice(2));
const production = args.has('--production');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  logLevel: 'warning',
  absWorkingDir: root,
};

/** @type {import('esbuild').BuildOptions[]} */
const builds = [];
if (args.has('--tests')) {
  rmSync(join(root, 'out', 'test'), { recursive: true, force: true });
  const dir = join(root, 'extension', 'test');
  const entries = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => join(dir, f));
  // vscode stays external: a unit test that pulls it in fails loudly instead of testing a stub.
  builds.push({ ...common, entryPoints: entries, outdir: join(root, 'out', 'test'), external: ['vscode'], sourcemap: 'inline' });
} else if (args.has('--e2e')) {
  builds.push({
    ...common,
    entryPoints: [join(root, 'extension', 'test', 'e2e', 'run.ts'), join(root, 'extension', 'test', 'e2e', 'report-colors.ts')],
    outdir: join(root, 'out', 'e2e'),
    external: ['playwright-core'],
    sourcemap: 'inline',
  });
} else {
  builds.push({
    ...common,
    entryPoints: [join(root, 'extension', 'src', 'extension.ts')],
    outfile: join(root, 'dist', 'extension.js'),
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
    sourcesContent: false,
  });
}

if (args.has('--watch')) {
  for (const options of builds) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
  }
  console.log('watching...');
} else {
  if (!args.has('--tests') && !args.has('--e2e')) {
    rmSync(join(root, 'dist'), { recursive: true, force: true });
  }
  for (const options of builds) {
    await esbuild.build(options);
  }
}
