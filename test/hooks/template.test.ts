import { describe, expect, it } from 'vitest';
import type { HookEvent } from '../../src/hooks/hook-event.js';
import { fillTemplate } from '../../src/hooks/template.js';

const event: HookEvent = {
  event: { name: 'error', code: 'permission_denied', detail: { missing: 'write:dist/**', paths: ['dist/a', 'dist/b'] } },
  tool: { id: 'bash', mutates_state: true },
  arguments: { args: ['run', 'build'], count: 3, empty: null },
  client: { id: 'loopback' },
  directive: { name: 'deploy_staging' },
  cost: { turns: 19, spend: 3.25 },
  limits: { turns: 20 },
  permissions: {},
};

describe('fillTemplate', () => {
  it('fills the deploy_staging.md inputs from the event', () => {
    expect(fillTemplate('${directive.name}', event)).toEqual({ ok: true, text: 'deploy_staging', missing: [] });
    expect(fillTemplate('${event.detail.missing}', event)).toEqual({ ok: true, text: 'write:dist/**', missing: [] });
  });

  it('puts strings in as they are and anything else as JSON', () => {
    const filled = fillTemplate('turns=${cost.turns} spend=${cost.spend} write=${tool.mutates_state} none=${arguments.empty} paths=${event.detail.paths} detail=${event.detail}', event);
    expect(filled).toEqual({
      ok: true,
      text: 'turns=19 spend=3.25 write=true none=null paths=["dist/a","dist/b"] detail={"missing":"write:dist/**","paths":["dist/a","dist/b"]}',
      missing: [],
    });
  });

  it('selects list items by number', () => {
    expect(fillTemplate('${arguments.args.1}', event)).toMatchObject({ text: 'build' });
    expect(fillTemplate('${arguments.args.01}', event)).toMatchObject({ text: '${arguments.args.01}', missing: ['arguments.args.01'] });
  });

  it('leaves a missing placeholder as written and says which', () => {
    const filled = fillTemplate('a=${event.detail.nope} b=${directive.name} c=${WEATHER_API_KEY} d=${tool.id.length}', event);
    expect(filled).toEqual({
      ok: true,
      text: 'a=${event.detail.nope} b=deploy_staging c=${WEATHER_API_KEY} d=${tool.id.length}',
      missing: ['event.detail.nope', 'WEATHER_API_KEY', 'tool.id.length'],
    });
  });

  it('leaves anything that is not a dotted path as written', () => {
    const text = '${cost.turns + 1} ${ cost.turns } ${cost["turns"]} ${} $cost.turns {cost.turns} ${cost.turns';
    expect(fillTemplate(text, event)).toEqual({ ok: true, text, missing: [] });
  });

  it('reads own properties only', () => {
    expect(fillTemplate('${tool.constructor} ${tool.__proto__} ${arguments.args.length}', event)).toMatchObject({
      text: '${tool.constructor} ${tool.__proto__} ${arguments.args.length}',
    });
  });

  it('fails (closed) when the filled text passes the cap', () => {
    const big = { ...event, arguments: { blob: 'x'.repeat(100) } };
    expect(fillTemplate('${arguments.blob}', big, 100)).toMatchObject({ ok: true });
    expect(fillTemplate('!${arguments.blob}', big, 100)).toEqual({ ok: false, reason: 'the filled input is more than 100 characters, the most a hook input may be' });
    expect(fillTemplate('${arguments.blob}${arguments.blob}${arguments.blob}', big, 150)).toMatchObject({ ok: false });
  });
});
