/**
 * `GET /v1/models` in the shape the asking client knows: Anthropic's when the request carries
 * an `anthropic-version` header (its SDK always sends one), OpenAI's otherwise. A demo model
 * (a scripted stand-in, not a real LLM) says so with `demo: true`, so nobody mistakes its
 * answers for a model's.
 */

export interface ModelInfo {
  id: string;
  ownedBy: string;
  demo?: boolean;
}

const demoField = (m: ModelInfo) => (m.demo === true ? { demo: true } : {});

export function openAiModelList(models: ModelInfo[]): unknown {
  return { object: 'list', data: models.map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.ownedBy, ...demoField(m) })) };
}

export function anthropicModelList(models: ModelInfo[]): unknown {
  return {
    data: models.map((m) => ({ type: 'model', id: m.id, display_name: m.demo === true ? `${m.id} (demo)` : m.id, created_at: '1970-01-01T00:00:00Z', ...demoField(m) })),
    has_more: false,
    first_id: models[0]?.id ?? null,
    last_id: models.at(-1)?.id ?? null,
  };
}
