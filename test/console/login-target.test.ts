import { describe, expect, it } from 'vitest';
import { loginTarget } from '../../src/console/login-target.js';

describe('loginTarget (the `next` a login goes to)', () => {
  it('keeps a page of the console, with its query', () => {
    expect(loginTarget('/ui/approvals')).toBe('/ui/approvals');
    expect(loginTarget('/ui')).toBe('/ui');
    expect(loginTarget('/ui?x=1')).toBe('/ui?x=1');
    expect(loginTarget('/ui/executions?status=running&client=alice')).toBe('/ui/executions?status=running&client=alice');
    expect(loginTarget('/ui/executions/0193a1b2-0000-7000-8000-000000000001')).toBe('/ui/executions/0193a1b2-0000-7000-8000-000000000001');
  });

  it('refuses anything that could leave this origin or this console: no open redirect', () => {
    const refused = [
      undefined,
      '',
      '//evil.example',
      '//evil.example/ui',
      '/\\evil.example',
      '/ui\\..\\..\\evil.example',
      '\\\\evil.example',
      'https://evil.example/ui',
      'http:/ui',
      'javascript:alert(1)',
      '%2F%2Fevil.example',
      '/%2F%2Fevil.example',
      '/ui/%2F%2Fevil.example',
      '/%5Cevil.example',
      '/ui/%5c%5cevil.example',
      '/ui/%2e%2e/admin/v1/keys',
      '/ui/../admin/v1/keys',
      '/ui@evil.example',
      '/uievil',
      '/ui/\tx',
      '/ui/\r\nset-cookie: x=1',
      '/admin/v1/keys',
      '/ui/login',
      '/ui/login?next=//evil.example',
      '/ui/logout',
      `/ui/${'a'.repeat(2000)}`,
    ];
    for (const value of refused) expect(loginTarget(value), String(value)).toBeUndefined();
  });
});
