import { substituteEnv, type SubstitutionScope } from './substitute.js';

/**
 * The host (with its port) of a filled URL, when the project's author chose it: the template,
 * with `${ENV}` filled (the operator's values count as the author's) and every `{param}` left
 * as written, names a host free of placeholders, and the filled URL has that same host. Any
 * other URL was steered by the call's arguments, and the http_client primitive's address guard
 * checks it (undefined).
 */
export function authorHost(template: string, scope: SubstitutionScope, filled: string): string | undefined {
  let written: URL;
  let sent: URL;
  try {
    written = new URL(substituteEnv(template, scope));
    sent = new URL(filled);
  } catch {
    return undefined;
  }
  // The URL parser keeps braces in a host: `http://{sub}.example.com` parses, and so would an argument that fills it with `{sub}`.
  if (written.host === '' || /[{}]/.test(written.host)) return undefined;
  return written.host === sent.host ? written.host : undefined;
}
