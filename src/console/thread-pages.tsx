import type { Child } from 'hono/jsx';
import type { ThreadLine } from '../threads/thread-store.js';
import { Json, When } from './console-layout.js';
import { query, render, type ConsoleRouter } from './console-route.js';
import { UsageTable } from './usage-table.js';

/**
 * Directive threads: the list, the most recently written first (live), and one thread's
 * transcript line by line (each turn's text, each call and its result, each intent not run, its
 * end), followed live while the thread runs: the stream watches the thread's lines
 * (live-events.ts), and the page fetches itself again when one is written.
 */

interface ThreadRow {
  id: string;
  directive: string;
  version?: string;
  client: string;
  model: string;
  parent?: string;
  depth: number;
  started_at: string;
  status: string;
  ended_at?: string;
  steps_taken?: number;
  failure?: string;
  /** Over all its runs (own + children); absent until a run ends. */
  usage?: unknown;
}

const LISTED = 100;
/** The API's most lines a page; a longer transcript goes on with "Later lines →". */
const LINES = 1000;
/** Longer tool results are folded: the turns around them are what a person follows. */
const FOLD_CHARS = 600;

export function mountThreadPages(router: ConsoleRouter): void {
  router.page('/ui/threads', 'threads', async (c, r) => {
    const { threads, more } = (await r.api('GET', `/admin/v1/threads?limit=${LISTED}`)) as { threads: ThreadRow[]; more: boolean };
    return render(
      c,
      { title: 'Threads', viewer: r.viewer, current: '/ui/threads', live: 'threads' },
      <>
        <h1>Threads</h1>
        {threads.length === 0 ? (
          <p class="empty">No threads yet: a directive runs as one (kiwi directives run NAME, or an MCP client's execute of a directive).</p>
        ) : (
          <div class="table">
            <table class="threads">
              <thead>
                <tr>
                  <th>Started</th>
                  <th>Status</th>
                  <th>Directive</th>
                  <th>Client</th>
                  <th>Model</th>
                  <th>Steps</th>
                  <th>Id</th>
                </tr>
              </thead>
              <tbody>
                {threads.map((t) => (
                  <tr>
                    <td>
                      <When at={t.started_at} />
                    </td>
                    <td>
                      <span class={`status ${t.status}`}>{t.status}</span>
                    </td>
                    <td>
                      {t.directive}
                      {t.version === undefined ? '' : ` ${t.version}`}
                      {t.parent === undefined ? null : <span class="meta"> (spawned)</span>}
                    </td>
                    <td>{t.client}</td>
                    <td>
                      <code>{t.model}</code>
                    </td>
                    <td>{t.steps_taken ?? ''}</td>
                    <td>
                      <a href={`/ui/threads/${encodeURIComponent(t.id)}`}>
                        <code>{t.id}</code>
                      </a>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {more ? <p class="meta">{`Only the ${LISTED} most recently written are shown.`}</p> : null}
      </>,
    );
  });

  router.page('/ui/threads/:id', 'threads', async (c, r) => {
    const id = c.req.param('id') ?? '';
    const after = c.req.query('after') ?? '';
    const answer = (await r.api('GET', `/admin/v1/threads/${encodeURIComponent(id)}${query({ after, limit: String(LINES) })}`)) as { thread: ThreadRow; lines: ThreadLine[]; next_after: number; more: boolean };
    const t = answer.thread;
    return render(
      c,
      { title: `Thread ${t.directive}`, viewer: r.viewer, current: '/ui/threads', live: `thread:${t.id}` },
      <>
        <h1>
          Thread <code>{t.id}</code>
        </h1>
        <p class="meta">
          <span class={`status ${t.status}`}>{t.status}</span> · directive <strong>{t.directive}</strong>
          {t.version === undefined ? '' : ` ${t.version}`} · client <strong>{t.client}</strong> · model <code>{t.model}</code> · started <When at={t.started_at} />
          {t.ended_at === undefined ? null : (
            <>
              {' '}
              · ended <When at={t.ended_at} />
            </>
          )}
          {t.steps_taken === undefined ? '' : ` · ${t.steps_taken} step(s)`}
          {t.failure === undefined ? '' : ` · failure: ${t.failure}`}
          {t.parent === undefined ? null : (
            <>
              {' '}
              · spawned by{' '}
              <a href={`/ui/threads/${encodeURIComponent(t.parent)}`}>
                <code>{t.parent}</code>
              </a>
            </>
          )}
        </p>
        <UsageTable usage={t.usage} />
        {t.status === 'running' ? <p class="hint">It runs: this page shows each line as it is written.</p> : null}
        {t.status === 'cut_short' ? <p class="hint">{`It did not end, and no process writes it any more: kiwi threads resume ${t.id} goes on with it.`}</p> : null}
        <ol class="transcript">
          {answer.lines.map((line) => (
            <TranscriptLine line={line} />
          ))}
        </ol>
        <p class="pager">
          {after === '' || after === '0' ? null : <a href={`/ui/threads/${encodeURIComponent(t.id)}`}>← From the start</a>}
          {answer.more ? <a href={`/ui/threads/${encodeURIComponent(t.id)}?after=${answer.next_after}`}>Later lines →</a> : null}
        </p>
      </>,
    );
  });
}

/** A text as written, folded after its first lines when it is long. */
function Text(props: { text: string; fold?: boolean }) {
  if (props.fold !== true || props.text.length <= FOLD_CHARS) return <div class="text">{props.text}</div>;
  return (
    <details>
      <summary>
        <span class="text">{`${props.text.slice(0, 200)}…`}</span>
      </summary>
      <div class="text">{props.text}</div>
    </details>
  );
}

function Line(props: { kind: string; label: Child; children?: Child }) {
  return (
    <li class={`line ${props.kind}`}>
      <span class="label">{props.label}</span> {props.children}
    </li>
  );
}

/** One line of a transcript as people read it (threads/thread-text.ts writes the same for the CLI). */
function TranscriptLine(props: { line: ThreadLine }) {
  const line = props.line;
  switch (line.type) {
    case 'thread':
      return (
        <Line kind="start" label="Started">
          <When at={line.started_at} /> by <strong>{line.client}</strong> on <code>{line.model}</code>: directive <strong>{line.directive}</strong> with
          <Json value={line.inputs} />
        </Line>
      );
    case 'turn':
      return (
        <Line kind="turn" label={`Turn ${line.turn}`}>
          <Text text={line.text} />
        </Line>
      );
    case 'call':
      return (
        <Line kind="call" label={<>→ call <code>{line.tool}</code></>}>
          <Json value={line.arguments} />
        </Line>
      );
    case 'result': {
      const ok = line.status === 'ok' && line.is_error !== true;
      const said = ok ? '✓ result of' : line.status === 'ok' ? '✗ failed:' : line.status === 'denied' ? '✗ denied:' : '✗ error:';
      return (
        <Line kind={`result ${ok ? 'ok' : 'failed'}`} label={<>{said} <code>{line.tool}</code></>}>
          <Text text={line.text} fold />
        </Line>
      );
    }
    case 'unresolved':
      return (
        <Line kind="unresolved" label="? Not run">
          <Text text={`“${line.intent}”: ${line.reason}`} fold />
        </Line>
      );
    case 'approval':
      return (
        <Line kind="approval" label={<>… <code>{line.tool}</code> waits for a person</>}>
          {line.reason} · <a href="/ui/approvals">approvals</a> (step <code>{line.step_id}</code>)
        </Line>
      );
    case 'help':
      return (
        <Line kind="help" label={`! help ${line.action}`}>
          <Text text={line.message} />
          {line.checkpoint === undefined ? null : <span class="meta">{`checkpoint ${line.checkpoint.slice(0, 12)}`}</span>}
        </Line>
      );
    case 'resume':
      return (
        <Line kind="resume" label="Resumed">
          <When at={line.at} /> by <strong>{line.client}</strong> on <code>{line.model}</code>
          {line.message === undefined ? null : <Text text={line.message} />}
        </Line>
      );
    case 'end':
      return (
        <Line kind={`end ${line.status}`} label="Ended">
          <When at={line.ended_at} />: <span class={`status ${line.status}`}>{line.status}</span>
          {` after ${line.steps_taken} step(s)${line.limit ? `, at the ${line.limit} limit` : ''}${line.failure ? `, failure: ${line.failure}` : ''}${line.error ? `: ${line.error}` : ''}`}
          {line.result === '' ? null : <Text text={line.result} />}
        </Line>
      );
  }
}
