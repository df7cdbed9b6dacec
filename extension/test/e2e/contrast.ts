// What a reader of a page sees of its text: every element with text of its own, its colour, the
// background it is drawn on (the first ancestor's that is not transparent) and their WCAG contrast.
// Runs inside the page (page.evaluate / frame.evaluate): it must not close over anything.

export interface TextContrast {
    /** The element's tag and class, e.g. `b.sev-error`. */
    what: string;
    text: string;
    color: string;
    background: string;
    contrast: number;
}

export interface ContrastReport {
    bodyColor: string;
    bodyBackground: string;
    texts: TextContrast[];
}

export function contrastProbe(): ContrastReport {
    const rgba = (css: string): [number, number, number, number] => {
        const m = /rgba?\(([^)]+)\)/.exec(css);
        if (m === null) {
            return [0, 0, 0, 0];
        }
        const parts = (m[1] ?? '').split(/[\s,/]+/).filter((p) => p !== '').map(Number);
        return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 1];
    };
    const luminance = ([r, g, b]: [number, number, number, number]): number => {
        const lin = (c: number): number => {
            const s = c / 255;
            return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    /** `top` drawn over the opaque `under`. */
    const over = (top: [number, number, number, number], under: [number, number, number, number]): [number, number, number, number] => {
        const a = top[3];
        return [top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a), top[2] * a + under[2] * (1 - a), 1];
    };
    /** The opaque colour behind `el`: its backgrounds and its ancestors', composed, over white. */
    const backdrop = (el: Element | null): [number, number, number, number] => {
        const layers: [number, number, number, number][] = [];
        for (let e = el; e !== null; e = e.parentElement) {
            const c = rgba(getComputedStyle(e).backgroundColor);
            if (c[3] > 0) {
                layers.push(c);
                if (c[3] >= 1) {
                    break;
                }
            }
        }
        let out: [number, number, number, number] = [255, 255, 255, 1];
        for (const layer of layers.reverse()) {
            out = over(layer, out);
        }
        return out;
    };
    const texts: TextContrast[] = [];
    for (const el of Array.from(document.body.querySelectorAll('*'))) {
        const own = Array.from(el.childNodes)
            .filter((n) => n.nodeType === Node.TEXT_NODE)
            .map((n) => n.textContent ?? '')
            .join('')
            .trim();
        const style = getComputedStyle(el);
        if (own === '' || style.display === 'none' || style.visibility === 'hidden') {
            continue;
        }
        const svgText = el instanceof SVGElement;
        const bg = backdrop(svgText ? el.closest('div') : el);
        const fg = over(rgba(svgText ? style.fill : style.color), bg);
        const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a) as [number, number];
        texts.push({
            what: `${el.tagName.toLowerCase()}${el.getAttribute('class') !== null ? `.${el.getAttribute('class')?.split(' ').join('.') ?? ''}` : ''}`,
            text: own.slice(0, 60),
            color: `rgb(${fg.slice(0, 3).map(Math.round).join(', ')})`,
            background: `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})`,
            contrast: Math.round(((l1 + 0.05) / (l2 + 0.05)) * 100) / 100,
        });
    }
    const body = getComputedStyle(document.body);
    return { bodyColor: body.color, bodyBackground: body.backgroundColor, texts };
}
