/**
 * The console's icon: a kiwi-green dot. Every page links it inline (a data: URL, which the
 * Content-Security-Policy's `img-src` allows), and /favicon.ico answers it to anyone, so that no
 * browser's guess at /favicon.ico is a 404 or a 401 in the gateway's log.
 */
export const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#2f7d32"/><circle cx="8" cy="8" r="2" fill="#1d2329"/></svg>';

export const FAVICON_DATA_URL = `data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}`;
