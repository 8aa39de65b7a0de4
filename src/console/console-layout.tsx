import type { Child } from 'hono/jsx';
import type { AdminArea } from '../clients/access.js';
import { FAVICON_DATA_URL } from './favicon.js';

/**
 * The frame of every console page: the header with the areas the caller may open, the page's
 * main part (fetched again alone when it changes, see assets/console.js), and the one script and
 * stylesheet, both served from /ui/assets (the Content-Security-Policy allows nothing inline).
 */

export interface Viewer {
  client: string;
  /** The areas of the admin API this viewer may use: the header shows only these. */
  may(area: AdminArea): boolean;
  /** The session's CSRF token, carried by every form that changes something. */
  csrf: string;
  /** Opened without a key (a loopback gateway with no keys): there is nothing to log out of. */
  keyless?: true;
}

const AREAS: [AdminArea, string, string][] = [
  ['executions', '/ui', 'Overview'],
  ['approvals', '/ui/approvals', 'Approvals'],
  ['executions', '/ui/executions', 'Executions'],
  ['audit', '/ui/audit', 'Audit'],
  ['threads', '/ui/threads', 'Threads'],
  ['usage', '/ui/usage', 'Usage'],
  ['tools', '/ui/tools', 'Tools'],
  ['keys', '/ui/keys', 'Keys'],
];

export function Layout(props: { title: string; viewer?: Viewer; live?: string; current?: string; children: Child }) {
  const { viewer } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Kiwi Gateway`}</title>
        <link rel="icon" type="image/svg+xml" href={FAVICON_DATA_URL} />
        <link rel="stylesheet" href="/ui/assets/console.css" />
        <script src="/ui/assets/console.js" defer />
      </head>
      <body>
        <header>
          <a class="brand" href="/ui">
            Kiwi Gateway
          </a>
          {viewer === undefined ? null : (
            <nav>
              {AREAS.filter(([area]) => viewer.may(area)).map(([, href, label]) => (
                <a href={href} aria-current={props.current === href ? 'page' : undefined}>
                  {label}
                </a>
              ))}
            </nav>
          )}
          {viewer === undefined ? null : viewer.keyless ? (
            // Logging out would log straight back in: the console opens to anyone on this machine until a key exists.
            <span class="who">no keys: the console is open to this machine</span>
          ) : (
            <form class="logout" method="post" action="/ui/logout">
              <input type="hidden" name="_csrf" value={viewer.csrf} />
              <span class="who">{viewer.client}</span>
              <button type="submit">Log out</button>
            </form>
          )}
        </header>
        <main data-live={props.live}>{props.children}</main>
      </body>
    </html>
  );
}

/** A hidden CSRF field for a form that changes something. */
export function Csrf(props: { viewer: Viewer }) {
  return <input type="hidden" name="_csrf" value={props.viewer.csrf} />;
}

/** A time as people read it, with the exact one on hover. */
export function When(props: { at: unknown }) {
  const text = typeof props.at === 'string' ? props.at : '';
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return <span>-</span>;
  return <time datetime={text}>{date.toISOString().replace('T', ' ').slice(0, 19)}</time>;
}

/** JSON shown as it is, escaped like all text, folded when long. */
export function Json(props: { value: unknown }) {
  const text = JSON.stringify(props.value, null, 2) ?? 'null';
  return text.length > 400 ? (
    <details>
      <summary>
        <code>{`${text.slice(0, 120).replace(/\s+/g, ' ')}…`}</code>
      </summary>
      <pre>{text}</pre>
    </details>
  ) : (
    <pre>{text}</pre>
  );
}

export function Notice(props: { kind: 'ok' | 'warn' | 'error'; children: Child }) {
  return (
    <p class={`notice ${props.kind}`} role={props.kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </p>
  );
}
