import type { Context } from 'hono';
import { raw } from 'hono/html';
import type { Child } from 'hono/jsx';
import type { AdminArea } from '../clients/access.js';
import type { Caller } from '../policy/caller.js';
import { Layout, Notice, type Viewer } from './console-layout.js';

/** What every area of the console (console-routes.tsx) shares. */

/** The admin API, called in this process as `caller`: the console sees exactly what the API lets that key see. */
export type AdminCall = (caller: Caller, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

/** A request of a logged-in person. */
export interface ConsoleRequest {
  viewer: Viewer;
  caller: Caller;
  /** The admin API as this caller; an answer that is not 2xx throws ConsoleError with the API's message. */
  api(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Record<string, unknown>>;
}

/** An admin API refusal, shown on the page with its status. */
export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ConsoleRouter {
  /** A page of an area: the viewer may use the area (else 403), or is sent to log in. */
  page(path: string, area: AdminArea, handler: (c: Context, r: ConsoleRequest) => Promise<Response>): void;
  /** A change: the same, and the form must carry the session's CSRF token (else 403). `form` is the body, read within a cap. */
  change(path: string, area: AdminArea, handler: (c: Context, r: ConsoleRequest, form: URLSearchParams) => Promise<Response>): void;
}

/** The request asked for the page's main part alone (a live update, assets/console.js). */
export const FRAGMENT_HEADER = 'x-kiwi-fragment';

/** A whole page, or its main part alone when the live script asks for it. */
export function render(c: Context, options: { title: string; viewer: Viewer; current: string; live?: string; status?: 200 | 201 | 400 | 403 | 404 | 409 | 500 }, content: Child): Response | Promise<Response> {
  const status = options.status ?? 200;
  if (c.req.header(FRAGMENT_HEADER) === '1') return c.html(<>{content}</>, status);
  return c.html(
    <>
      {raw('<!doctype html>')}
      <Layout title={options.title} viewer={options.viewer} current={options.current} {...(options.live === undefined ? {} : { live: options.live })}>
        {content}
      </Layout>
    </>,
    status,
  );
}

/** An error page for an admin API refusal. */
export function renderError(c: Context, viewer: Viewer, error: ConsoleError, current = '/ui'): Response | Promise<Response> {
  const status = ([400, 403, 404, 409] as const).find((s) => s === error.status) ?? 500;
  return render(c, { title: 'Refused', viewer, current, status }, <Notice kind="error">{error.message}</Notice>);
}

/** `?key=value` for the non-empty ones. */
export function query(params: Record<string, string | undefined>): string {
  const entries = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '');
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries).toString()}`;
}
