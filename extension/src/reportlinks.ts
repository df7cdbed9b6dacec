// The report's links to its findings' places (`<a class="loc" href="file:///...#L16">`, written by
// onnxlint/deep/report.py), turned into command links that open the file at that line in the editor.
// Pure, so node:test can run it.

const LOC = /<a class="loc" href="(file:\/\/[^"#]+)#L(\d+)">/g;

/** The path of a `file://` URI as the HTML escapes it (`&amp;` for `&`). */
function pathOf(uri: string): string {
    const unescaped = uri.replace(/&quot;/g, '"').replace(/&#x27;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    return decodeURIComponent(unescaped.replace(/^file:\/\//, ''));
}

export function linkLocations(html: string, command = 'onnxlint.openLocation'): string {
    return html.replace(LOC, (_all, uri: string, line: string) => {
        const args = encodeURIComponent(JSON.stringify([pathOf(uri), Number(line)]));
        return `<a class="loc" href="command:${command}?${args}">`;
    });
}
