import { describe, expect, it } from 'vitest';
import { riskCoverageSvg } from '../../bench/resolve/plot-risk-coverage.js';

describe('riskCoverageSvg', () => {
  it('draws one line per curve in the plot area, skips missing points, and escapes names', () => {
    const svg = riskCoverageSvg({ 'a/dev': [[1, 0.5], [0.5, 0.75], [null, null], [0, 1]], 'b<&>': [[0.2, 0.9]] }, 'T & U');
    const lines = [...svg.matchAll(/<polyline points="([^"]+)"/g)].map((m) => m[1]);
    expect(lines).toEqual(['490,210 275,120 60,30', '146,66']);
    expect(svg).toContain('>T &amp; U</text>');
    expect(svg).toContain('>b&lt;&amp;&gt;</text>');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
  });
});
