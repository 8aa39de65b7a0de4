/** One upstream model server as the config names it (gateway-config.ts reads them). */
export type UpstreamKind = 'openai' | 'anthropic' | 'demo';

/** An API key that stays out of logs: JSON, String() and util.inspect show "[redacted]". */
export interface Secret {
  reveal(): string;
}

export interface UpstreamConfig {
  name: string;
  kind: UpstreamKind;
  /** Absent for demo upstreams; defaulted for openai (api.openai.com/v1) and anthropic. */
  baseUrl?: string;
  /** The variable the key was read from. */
  apiKeyEnv?: string;
  apiKey?: Secret;
  /** Exact ids or globs (`*` any run of characters, `?` one), tried in order. */
  models: string[];
  timeoutMs?: number;
  /** Upstreams (by name) that serve its models when it is down, in order: failover-provider.ts. */
  fallbacks?: string[];
  /** Where it was configured: `file:line`, `environment variable OPENAI_API_KEY` or `built-in`. */
  source: string;
}
