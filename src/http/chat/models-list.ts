/**
 * `GET /v1/models` in the shape the asking client knows: Anthropic's when the request carries
 * an `anthropic-version` header (its SDK always sends one), OpenAI's otherwise. A demo model
 * (a scripted stand-in, not a real LLM) says so with `demo: true`, so nobody mistakes its
 * answers for a model's.
 *
 * An upstream whose own list could not be read (down, or refusing the key) is named in an extra
 * top-level field, `unavailable_upstreams`, and the `x-kiwi-unavailable-upstreams` header: its
 * configured ids are still listed, and both SDKs ignore a field they do not know.
 */

export interface ModelInfo {
  id: string;
  ownedBy: string;
  demo?: boolean;
}

/** An upstream whose model list could not be read: it is probably down, or refuses the gateway's key. */
export interface UnavailableUpstream {
  /** Its name in gateway.yaml. */
  name: string;
  /** Its base URL as the banner shows it: origin and path, never a key or a query. */
  url: string;
  /** Why: refused, no answer in time, an HTTP status (401/403: the key). */
  error: string;
}

export interface ModelList {
  models: ModelInfo[];
  unavailable?: UnavailableUpstream[];
}

export const UNAVAILABLE_UPSTREAMS_HEADER = 'x-kiwi-unavailable-upstreams';

/** The header's value (the names, comma-separated), or undefined when every upstream answered. */
export function unavailableHeader(list: ModelList): string | undefined {
  return list.unavailable !== undefined && list.unavailable.length > 0 ? list.unavailable.map((u) => u.name).join(', ') : undefined;
}

const unavailableField = (list: ModelList) => (list.unavailable !== undefined && list.unavailable.length > 0 ? { unavailable_upstreams: list.unavailable.map((u) => ({ name: u.name, url: u.url, error: u.error })) } : {});

const demoField = (m: ModelInfo) => (m.demo === true ? { demo: true } : {});

export function openAiModelList(list: ModelList): unknown {
  return { object: 'list', data: list.models.map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.ownedBy, ...demoField(m) })), ...unavailableField(list) };
}

export function anthropicModelList(list: ModelList): unknown {
  const { models } = list;
  return {
    data: models.map((m) => ({ type: 'model', id: m.id, display_name: m.demo === true ? `${m.id} (demo)` : m.id, created_at: '1970-01-01T00:00:00Z', ...demoField(m) })),
    has_more: false,
    first_id: models[0]?.id ?? null,
    last_id: models.at(-1)?.id ?? null,
    ...unavailableField(list),
  };
}
