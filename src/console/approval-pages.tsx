import { Csrf, Json, Notice, When } from './console-layout.js';
import { render, type ConsoleRouter } from './console-route.js';

/**
 * The approval queue: each call that waits for a person, shown plainly (which client's agent
 * wants to run which tool with which arguments, since when, until when), with Grant and Deny.
 * A grant carries the digest of the arguments shown, so it grants exactly what was seen.
 */

interface Approval {
  step_id: string;
  execution_id: string;
  client: string;
  agent_id: string;
  tool_id: string;
  arguments: unknown;
  arguments_digest: string;
  since: string;
  expires: string;
  answerable: boolean;
}

const STEP_ID = /^[A-Za-z0-9_.:-]{1,256}$/;

export function mountApprovalPages(router: ConsoleRouter): void {
  router.page('/ui/approvals', 'approvals', async (c, r) => {
    const { approvals, more } = (await r.api('GET', '/admin/v1/approvals?limit=200')) as { approvals: Approval[]; more: boolean };
    const done = c.req.query('done');
    return render(
      c,
      { title: 'Approvals', viewer: r.viewer, current: '/ui/approvals', live: 'approvals' },
      <>
        <h1>Approvals</h1>
        {done === undefined ? null : <Notice kind="ok">{done}</Notice>}
        {approvals.length === 0 ? (
          <p class="empty">Nothing waits for approval.</p>
        ) : (
          <ul class="cards">
            {approvals.map((a) => (
              <li class="card approval" data-step={a.step_id}>
                <h2>
                  <span class="tool">{a.tool_id}</span> for <span class="client">{a.client}</span>
                </h2>
                <p class="plain">
                  Agent <code>{a.agent_id}</code> of client <strong>{a.client}</strong> wants to run <strong>{a.tool_id}</strong> with these arguments:
                </p>
                <Json value={a.arguments} />
                <p class="meta">
                  Asked <When at={a.since} />, expires <When at={a.expires} /> · <a href={`/ui/executions/${encodeURIComponent(a.execution_id)}`}>execution</a> · step <code>{a.step_id}</code>
                </p>
                {a.answerable ? (
                  <div class="answer">
                    <form method="post" action={`/ui/approvals/${encodeURIComponent(a.step_id)}`}>
                      <Csrf viewer={r.viewer} />
                      <input type="hidden" name="decision" value="grant" />
                      <input type="hidden" name="arguments_digest" value={a.arguments_digest} />
                      <button type="submit" class="grant">
                        Grant
                      </button>
                    </form>
                    <form method="post" action={`/ui/approvals/${encodeURIComponent(a.step_id)}`}>
                      <Csrf viewer={r.viewer} />
                      <input type="hidden" name="decision" value="deny" />
                      <input type="text" name="reason" placeholder="Reason (told to the agent)" maxlength={2000} />
                      <button type="submit" class="deny">
                        Deny
                      </button>
                    </form>
                  </div>
                ) : (
                  <p class="meta">Your client made this call, so another person answers it.</p>
                )}
              </li>
            ))}
          </ul>
        )}
        {more ? <p class="meta">More wait than are shown here; answer some to see the rest.</p> : null}
      </>,
    );
  });

  router.change('/ui/approvals/:stepId', 'approvals', async (c, r, form) => {
    const stepId = c.req.param('stepId') ?? '';
    if (!STEP_ID.test(stepId)) return c.text('not a step id', 400);
    const decision = form.get('decision');
    const reason = form.get('reason') ?? '';
    const answer = await r.api('POST', `/admin/v1/approvals/${encodeURIComponent(stepId)}`, {
      decision,
      ...(decision === 'grant' ? { arguments_digest: form.get('arguments_digest') ?? '' } : {}),
      ...(decision === 'deny' && reason.trim() !== '' ? { reason: reason.trim() } : {}),
    });
    const said = `${answer['decision'] === 'grant' ? 'Granted' : 'Denied'} ${String(answer['tool_id'])} (step ${stepId}).`;
    return c.redirect(`/ui/approvals?done=${encodeURIComponent(said)}`, 303);
  });
}
