import type { AuditRecord } from '../audit/audit-record.js';
import { Notice, When } from './console-layout.js';
import { ConsoleError, query, render, type ConsoleRouter } from './console-route.js';

/**
 * The audit log: every tool call, allowed or denied, newest first, filtered by client, tool,
 * decision and time, a page at a time ("Older →" goes on from where the page stopped). A filter
 * the API refuses is shown with its message above the form, so the person can fix it.
 */

const DECISIONS = ['', 'allow', 'deny'];
const PAGE = 50;
const SHORT = 160;

/** A date-time input's value has no zone, which the API needs: the console reads and shows times in UTC. */
const NO_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?$/;
const utc = (value: string): string => (NO_ZONE.test(value) ? `${value}Z` : value);

export function mountAuditPage(router: ConsoleRouter): void {
  router.page('/ui/audit', 'audit', async (c, r) => {
    const filters = { client: c.req.query('client') ?? '', tool: c.req.query('tool') ?? '', decision: c.req.query('decision') ?? '', since: c.req.query('since') ?? '', until: c.req.query('until') ?? '' };
    const { client, tool, decision, since, until } = filters;
    const cursor = c.req.query('cursor') ?? '';
    let page: { records: AuditRecord[]; next_cursor: string; scan_capped: boolean } | undefined;
    let refused: ConsoleError | undefined;
    try {
      page = (await r.api('GET', `/admin/v1/audit${query({ ...filters, since: utc(since), until: utc(until), cursor, limit: String(PAGE) })}`)) as typeof page;
    } catch (error) {
      if (!(error instanceof ConsoleError) || error.status !== 400) throw error;
      refused = error;
    }
    return render(
      c,
      { title: 'Audit log', viewer: r.viewer, current: '/ui/audit', ...(refused === undefined ? {} : { status: 400 as const }) },
      <>
        <h1>Audit log</h1>
        <form class="filters" method="get" action="/ui/audit">
          <label>
            Client
            <input type="text" name="client" value={client} maxlength={64} />
          </label>
          <label>
            Tool
            <input type="text" name="tool" value={tool} maxlength={256} />
          </label>
          <label>
            Decision
            <select name="decision">
              {DECISIONS.map((d) => (
                <option value={d} selected={d === decision}>
                  {d === '' ? 'any' : d}
                </option>
              ))}
            </select>
          </label>
          <label>
            Since (UTC)
            <input type="datetime-local" name="since" value={since} step={1} />
          </label>
          <label>
            Until (UTC)
            <input type="datetime-local" name="until" value={until} step={1} />
          </label>
          <button type="submit">Filter</button>
        </form>
        {refused !== undefined ? (
          <Notice kind="error">{refused.message}</Notice>
        ) : page === undefined ? null : (
          <>
            {page.scan_capped ? (
              <Notice kind="warn">This page's search stopped at its cap before the page was full: older records may still match. "Older →" goes on from where it stopped.</Notice>
            ) : null}
            {page.records.length === 0 ? <p class="empty">No records{cursor === '' ? '' : ' on this page'}.</p> : <AuditTable records={page.records} />}
            <p class="pager">
              {cursor === '' ? null : <a href={`/ui/audit${query(filters)}`}>← Newest</a>}
              {page.next_cursor === '' ? null : <a href={`/ui/audit${query({ ...filters, cursor: page.next_cursor })}`}>Older →</a>}
            </p>
          </>
        )}
      </>,
    );
  });
}

function AuditTable(props: { records: AuditRecord[] }) {
  return (
    <div class="table">
      <table class="audit">
        <thead>
          <tr>
            <th>Time</th>
            <th>Client</th>
            <th>Tool</th>
            <th>Decision</th>
            <th>Call</th>
            <th>Session</th>
          </tr>
        </thead>
        <tbody>
          {props.records.map((a) => (
            <tr data-call={a.call_id}>
              <td>
                <When at={a.ts} />
              </td>
              <td class="client">{a.client ?? ''}</td>
              <td class="tool">
                <code>{a.tool}</code>
              </td>
              <td>
                <span class={`status ${a.decision}`}>{a.decision}</span>
              </td>
              <td class="call">
                <CallSummary record={a} />
              </td>
              <td>
                <code>{a.session}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const short = (value: unknown): string => {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text.length <= SHORT ? text : `${text.slice(0, SHORT)}…`;
};

/** What was asked and what came of it, in two short lines; the whole record under "details". */
function CallSummary(props: { record: AuditRecord }) {
  const a = props.record;
  const asked = a.help === undefined ? short(a.args) : `help ${a.help}: ${short((a.args as { message?: unknown } | undefined)?.message ?? '')}`;
  // A refusal's reason is also its error's message: said once, as the reason.
  const outcome =
    a.decision === 'deny'
      ? `denied: ${short(a.reason ?? a.error?.message ?? '')}`
      : a.error !== undefined
        ? `error ${a.error.code}: ${short(a.error.message)}`
        : a.result === undefined
          ? ''
          : `→ ${short(a.result)}`;
  return (
    <>
      <code>{asked}</code>
      {outcome === '' ? null : <div class="outcome">{outcome}</div>}
      {a.approval === undefined ? null : <div class="meta">{`${a.approval.approved ? 'approved' : 'not approved'} by ${a.approval.decided_by}`}</div>}
      <details>
        <summary>details</summary>
        <pre>{JSON.stringify(a, null, 2)}</pre>
      </details>
    </>
  );
}
