import { Csrf, Notice, When } from './console-layout.js';
import { ConsoleError, render, type ConsoleRouter } from './console-route.js';

/** Keys: the list, a new key (shown once), and revoking one. */

interface KeyRow {
  id: string;
  client: string;
  roles?: string[];
  agents?: string[];
  tools?: string[];
  policy?: string;
  created: string;
  revoked?: string;
}

const ROLES = ['client', 'agent', 'runner', 'approver', 'admin'];
const KEY_ID = /^key_[0-9a-f]{1,64}$/;

/** Names typed in one field: commas or spaces between them. */
const names = (text: string | null): string[] | undefined => {
  const list = (text ?? '').split(/[\s,]+/).filter((n) => n !== '');
  return list.length === 0 ? undefined : list;
};

export function mountKeyPages(router: ConsoleRouter): void {
  router.page('/ui/keys', 'keys', async (c, r) => {
    const { keys, where } = (await r.api('GET', '/admin/v1/keys')) as { keys: KeyRow[]; where: string };
    const done = c.req.query('done');
    return render(
      c,
      { title: 'Keys', viewer: r.viewer, current: '/ui/keys' },
      <>
        <h1>Keys</h1>
        {done === undefined ? null : <Notice kind="ok">{done}</Notice>}
        <p class="meta">Kept in {where}; only their hashes.</p>
        <div class="table">
          <table>
            <thead>
              <tr>
                <th>Id</th>
                <th>Client</th>
                <th>Roles</th>
                <th>Scopes</th>
                <th>Created</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr class={k.revoked === undefined ? '' : 'revoked'}>
                  <td>
                    <code>{k.id}</code>
                    {k.revoked === undefined && r.viewer.may('policy') ? (
                      <div>
                        <a href={`/ui/keys/${encodeURIComponent(k.id)}/policy`}>what it may do</a>
                      </div>
                    ) : null}
                  </td>
                  <td>{k.client}</td>
                  <td>{(k.roles ?? ['client']).join(', ')}</td>
                  <td>{[...(k.agents ? [`agents ${k.agents.join(', ')}`] : []), ...(k.tools ? [`tools ${k.tools.join(', ')}`] : []), ...(k.policy ? [`policy ${k.policy}`] : [])].join('; ')}</td>
                  <td>
                    <When at={k.created} />
                  </td>
                  <td>
                    {k.revoked === undefined ? (
                      <form method="post" action={`/ui/keys/${encodeURIComponent(k.id)}/revoke`} data-confirm={`Revoke ${k.id} of ${k.client}? Its next request is refused.`}>
                        <Csrf viewer={r.viewer} />
                        <button type="submit" class="deny">
                          Revoke
                        </button>
                      </form>
                    ) : (
                      <span>
                        revoked <When at={k.revoked} />
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <h2>New key</h2>
        <form class="new-key" method="post" action="/ui/keys">
          <Csrf viewer={r.viewer} />
          <label>
            Client
            <input type="text" name="client" required maxlength={64} pattern="[A-Za-z0-9_.\-]{1,64}" />
          </label>
          <fieldset>
            <legend>Roles</legend>
            {ROLES.map((role) => (
              <label class="inline">
                <input type="checkbox" name="role" value={role} checked={role === 'client'} /> {role}
              </label>
            ))}
          </fieldset>
          <label>
            Agent ids (agent role)
            <input type="text" name="agents" maxlength={2000} />
          </label>
          <label>
            Tool ids (runner role)
            <input type="text" name="tools" maxlength={2000} />
          </label>
          <label>
            Policy file in the project (optional)
            <input type="text" name="policy" maxlength={500} placeholder=".ai/config/clients/NAME.yaml" />
          </label>
          <button type="submit">Create key</button>
        </form>
      </>,
    );
  });

  router.change('/ui/keys', 'keys', async (c, r, form) => {
    const agents = names(form.get('agents'));
    const tools = names(form.get('tools'));
    const policy = (form.get('policy') ?? '').trim();
    const made = await r.api('POST', '/admin/v1/keys', {
      client: (form.get('client') ?? '').trim(),
      roles: form.getAll('role'),
      ...(agents ? { agents } : {}),
      ...(tools ? { tools } : {}),
      ...(policy === '' ? {} : { policy }),
    });
    const rec = made['record'] as KeyRow;
    return render(
      c,
      { title: 'Key created', viewer: r.viewer, current: '/ui/keys', status: 201 },
      <>
        <h1>Key created</h1>
        <Notice kind="ok">
          Key <code>{rec.id}</code> for client <strong>{rec.client}</strong> ({(rec.roles ?? []).join(', ')}). Copy it now: it is shown this once, and only its hash is kept.
        </Notice>
        <pre class="secret">{String(made['key'])}</pre>
        <p>
          <a href="/ui/keys">Back to the keys</a>
        </p>
      </>,
    );
  });

  router.change('/ui/keys/:id/revoke', 'keys', async (c, r) => {
    const id = c.req.param('id') ?? '';
    if (!KEY_ID.test(id)) throw new ConsoleError(400, 'not a key id');
    const { revoked } = (await r.api('DELETE', `/admin/v1/keys/${encodeURIComponent(id)}`)) as { revoked: KeyRow[] };
    const said = revoked.length === 0 ? `${id} was already revoked.` : `Revoked ${id} of ${revoked[0]?.client ?? ''}.`;
    return c.redirect(`/ui/keys?done=${encodeURIComponent(said)}`, 303);
  });
}
