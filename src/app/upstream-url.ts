/**
 * Upstream base URLs as people write them. An OpenAI-compatible server is configured by the URL
 * its `/chat/completions` and `/models` hang off; servers document either their root
 * (`http://127.0.0.1:11434`, Ollama) or `…/v1`. The rule: a URL with no path gets `/v1`; any
 * other path is used as written (proxies mount the API anywhere, e.g. `/openai/v1`).
 */

/** Why `value` cannot be an upstream URL, or null. */
export function urlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `"${value.slice(0, 200)}" is not an absolute URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `the URL must start with http:// or https://, not ${url.protocol}`;
  if (url.username !== '' || url.password !== '') return 'the URL must not carry credentials; put the key in an environment variable named by api_key_env';
  return null;
}

/** `http://host:port` and `http://host:port/` become `http://host:port/v1`; a URL with a path is kept. Expects a URL urlProblem accepted. */
export function openAiBaseUrl(value: string): string {
  const url = new URL(value);
  if (url.pathname !== '/' && url.pathname !== '') return value;
  url.pathname = '/v1';
  return url.href;
}
