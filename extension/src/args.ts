// A command line as the user types it, into argv (and back). Pure, so node:test can run it.

/** Splits like a POSIX shell, without expansions: spaces separate, quotes group, a backslash escapes. */
export function splitArgs(line: string): string[] {
    const out: string[] = [];
    let current = '';
    let inWord = false;
    let quote: '"' | "'" | undefined;
    for (let i = 0; i < line.length; i++) {
        const c = line.charAt(i);
        if (quote !== undefined) {
            if (c === quote) {
                quote = undefined;
            } else if (c === '\\' && quote === '"' && i + 1 < line.length && '"\\$`'.includes(line.charAt(i + 1))) {
                current += line.charAt(++i);
            } else {
                current += c;
            }
        } else if (c === '"' || c === "'") {
            quote = c;
            inWord = true;
        } else if (c === '\\' && i + 1 < line.length) {
            current += line.charAt(++i);
            inWord = true;
        } else if (/\s/.test(c)) {
            if (inWord) {
                out.push(current);
                current = '';
                inWord = false;
            }
        } else {
            current += c;
            inWord = true;
        }
    }
    if (quote !== undefined) {
        throw new Error(`unclosed ${quote} quote`);
    }
    if (inWord) {
        out.push(current);
    }
    return out;
}

/** The argv as a line `splitArgs` reads back the same. */
export function joinArgs(argv: readonly string[]): string {
    return argv.map((a) => (a !== '' && /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
