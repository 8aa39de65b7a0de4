import { readFileSync } from 'node:fs';

/**
 * The package's version, from the package.json above src/ (or dist/, or the test run's compiled
 * copy beside them): one number for `kiwi --version` and the MCP server's info.
 */
export const KIWI_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
