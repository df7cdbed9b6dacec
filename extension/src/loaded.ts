// When the extension's bundle started to load (imported first, so it runs before the modules it
// bundles): the start-up timing's first mark.
export const LOADED_AT = Date.now();
