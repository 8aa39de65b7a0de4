import { Csrf, Json, Notice, type Viewer } from './console-layout.js';
import { query, render, type ConsoleRouter } from './console-route.js';

/**
 * The tool catalog (searchable, paged) and the resolution playground: an intent in, what the
 * gateway would make of it out (the candidates with their scores, the filled arguments, the
 * confidence against the gate and the gate's decision, whether the policy allows it), with
 * nothing run. A key's effective policy is a page here too: what its requests may do with each tool.
 */

interface ToolRow {
  id: string;
  type: string;
  description: string;
  read_only: boolean;
  requires_approval: boolean;
  parameters: unknown;
}

interface Candidate {
  tool: string;
  score: number;
  allowed: boolean;
}

interface Step {
  intent: string;
  decision: 'resolved' | 'asked_back' | 'unresolved';
  call?: { tool: string; arguments: unknown };
  reason?: string;
  stop?: string;
  missing?: string[];
  confidence?: number;
  policy?: { tool: string; allowed: boolean; reason: string };
  candidates: Candidate[];
}

interface Preview {
  plan: string;
  reason?: string;
  gates: { threshold: number; call_gate: number | null; target_precision: number };
  steps: Step[];
}

const DECISION: Record<Step['decision'], string> = {
  resolved: 'would run',
  asked_back: 'asked back (nothing runs)',
  unresolved: 'not resolved (nothing runs)',
};

export function mountToolPages(router: ConsoleRouter): void {
  router.page('/ui/tools', 'tools', async (c, r) => {
    const q = c.req.query('q') ?? '';
    const cursor = c.req.query('cursor') ?? '';
    const page = (await r.api('GET', `/admin/v1/tools${query({ q, cursor, limit: '50' })}`)) as { tools: ToolRow[]; total: number; next_cursor: string | null };
    return render(
      c,
      { title: 'Tools', viewer: r.viewer, current: '/ui/tools' },
      <>
        <h1>Tools</h1>
        {r.viewer.may('playground') ? <Playground viewer={r.viewer} /> : null}
        <h2>Catalog</h2>
        <form class="filters" method="get" action="/ui/tools">
          <label>
            Search
            <input type="text" name="q" value={q} maxlength={200} />
          </label>
          <button type="submit">Search</button>
        </form>
        <p class="meta">{`${page.total} tools${q === '' ? '' : ` match “${q}”`}`}</p>
        <div class="table">
          <table>
            <thead>
              <tr>
                <th>Tool</th>
                <th>Description</th>
                <th>Effects</th>
                <th>Parameters</th>
              </tr>
            </thead>
            <tbody>
              {page.tools.map((t) => (
                <tr>
                  <td>
                    <code>{t.id}</code>
                    <div class="meta">{t.type}</div>
                  </td>
                  <td>{t.description}</td>
                  <td>{[t.read_only ? 'read-only' : 'changes things', ...(t.requires_approval ? ['needs approval'] : [])].join(', ')}</td>
                  <td>
                    <Json value={t.parameters} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {page.next_cursor === null ? null : (
          <p>
            <a href={`/ui/tools${query({ q, cursor: page.next_cursor })}`}>More →</a>
          </p>
        )}
      </>,
    );
  });

  router.change('/ui/playground', 'playground', async (c, r, form) => {
    const intent = form.get('intent') ?? '';
    const context = form.get('context') ?? '';
    const preview = (await r.api('POST', '/admin/v1/playground', { intent, ...(context.trim() === '' ? {} : { context }) })) as unknown as Preview;
    return render(
      c,
      { title: 'Playground', viewer: r.viewer, current: '/ui/tools' },
      <>
        <h1>Playground</h1>
        <Playground viewer={r.viewer} intent={intent} context={context} />
        <section class="preview">
          <p class="meta">
            {`Gate: retrieval threshold ${preview.gates.threshold}, call gate ${preview.gates.call_gate ?? 'none reaches'} (target precision ${preview.gates.target_precision}). Nothing was run.`}
          </p>
          {preview.plan === 'refused' ? <Notice kind="error">{preview.reason ?? 'the intent was refused'}</Notice> : null}
          {preview.steps.map((s) => (
            <article class="card step">
              <h2>
                <span class={`decision ${s.decision}`}>{DECISION[s.decision]}</span> {s.intent}
              </h2>
              {s.call === undefined ? null : (
                <>
                  <p>
                    Call <code>{s.call.tool}</code> with
                  </p>
                  <Json value={s.call.arguments} />
                </>
              )}
              {s.reason === undefined ? null : <p>{`${s.reason}${s.stop === undefined ? '' : ` (stopped at: ${s.stop})`}`}</p>}
              {s.missing !== undefined && s.missing.length > 0 ? <p>{`Missing: ${s.missing.join(', ')}`}</p> : null}
              <p class="meta">
                {`Confidence ${s.confidence === undefined ? '-' : s.confidence.toFixed(3)}`}
                {s.policy === undefined ? '' : ` · policy: ${s.policy.allowed ? 'allowed' : 'denied'} (${s.policy.reason})`}
              </p>
              <table class="candidates">
                <thead>
                  <tr>
                    <th>Candidate</th>
                    <th>Score</th>
                    <th>Policy</th>
                  </tr>
                </thead>
                <tbody>
                  {s.candidates.map((cand) => (
                    <tr>
                      <td>
                        <code>{cand.tool}</code>
                      </td>
                      <td>{cand.score.toFixed(3)}</td>
                      <td>{cand.allowed ? 'allowed' : 'denied'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </article>
          ))}
        </section>
      </>,
    );
  });

  router.page('/ui/keys/:id/policy', 'policy', async (c, r) => {
    const id = c.req.param('id') ?? '';
    const cursor = c.req.query('cursor') ?? '';
    const answer = (await r.api('GET', `/admin/v1/keys/${encodeURIComponent(id)}/policy${query({ cursor, limit: '200' })}`)) as {
      key: { id: string; client: string; roles?: string[] };
      served: boolean;
      refused?: string;
      policy: { file?: string; grants: { by: string; tools: string[] }[] };
      tools: { id: string; allowed: boolean; reason: string; approval?: string }[];
      next_cursor: string | null;
      note?: string;
    };
    return render(
      c,
      { title: `Policy of ${answer.key.id}`, viewer: r.viewer, current: '/ui/keys' },
      <>
        <h1>
          What <code>{answer.key.id}</code> of {answer.key.client} may do
        </h1>
        {answer.served ? null : <Notice kind="error">{answer.refused ?? 'This key is not served.'}</Notice>}
        <p class="meta">{`Roles ${(answer.key.roles ?? ['client']).join(', ')}${answer.policy.file === undefined ? '' : ` · policy file ${answer.policy.file}`}`}</p>
        <div class="table">
          <table>
            <thead>
              <tr>
                <th>Tool</th>
                <th>Decision</th>
                <th>Why</th>
              </tr>
            </thead>
            <tbody>
              {answer.tools.map((t) => (
                <tr>
                  <td>
                    <code>{t.id}</code>
                  </td>
                  <td>
                    <span class={`decision ${t.allowed ? 'resolved' : 'unresolved'}`}>{t.allowed ? (t.approval === undefined ? 'allowed' : 'allowed, with approval') : 'denied'}</span>
                  </td>
                  <td>{t.approval === undefined ? t.reason : `${t.reason}; ${t.approval}`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {answer.next_cursor === null ? null : (
          <p>
            <a href={`/ui/keys/${encodeURIComponent(id)}/policy${query({ cursor: answer.next_cursor })}`}>More →</a>
          </p>
        )}
        {answer.note === undefined ? null : <p class="meta">{answer.note}</p>}
      </>,
    );
  });
}

function Playground(props: { viewer: Viewer; intent?: string; context?: string }) {
  return (
    <form class="playground" method="post" action="/ui/playground">
      <Csrf viewer={props.viewer} />
      <label>
        Intent, as an agent writes it in [TOOL: …]
        <input type="text" name="intent" value={props.intent ?? ''} required maxlength={2000} placeholder={'read_file {"path": "package.json"}'} />
      </label>
      <label>
        Conversation it refers to (optional)
        <textarea name="context" rows={2} maxlength={16000}>
          {props.context ?? ''}
        </textarea>
      </label>
      <button type="submit">Try it (nothing runs)</button>
    </form>
  );
}
