import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

/**
 * `npm run bench -- risk-coverage-plot --in suite.json --out FILE.svg`: the risk–coverage curves
 * of a `resolve-suite` results file as an SVG picture (one line per dataset/split: coverage on x,
 * executed precision on y, one point per confidence threshold), drawn by hand: no dependency.
 */

const USAGE = 'npm run bench -- risk-coverage-plot --in SUITE.json --out FILE.svg';

export type Curve = Array<[number | null, number | null]>;

const WIDTH = 720;
const HEIGHT = 440;
const PAD = { left: 60, right: 230, top: 30, bottom: 50 };
const COLOURS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666'];

export function riskCoverageSvg(curves: Record<string, Curve>, title: string): string {
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (c: number): number => PAD.left + c * plotW;
  const y = (p: number): number => PAD.top + (1 - p) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${PAD.left}" y="18" font-size="14">${escape(title)}</text>`,
  ];
  for (let i = 0; i <= 10; i++) {
    const v = i / 10;
    parts.push(`<line x1="${x(v)}" y1="${y(0)}" x2="${x(v)}" y2="${y(1)}" stroke="#eee"/>`, `<line x1="${x(0)}" y1="${y(v)}" x2="${x(1)}" y2="${y(v)}" stroke="#eee"/>`);
    parts.push(`<text x="${x(v)}" y="${y(0) + 16}" text-anchor="middle">${v.toFixed(1)}</text>`, `<text x="${x(0) - 8}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(1)}</text>`);
  }
  parts.push(
    `<line x1="${x(0)}" y1="${y(0.95)}" x2="${x(1)}" y2="${y(0.95)}" stroke="#999" stroke-dasharray="4 3"/>`,
    `<text x="${x(1) - 4}" y="${y(0.95) - 4}" text-anchor="end" fill="#666">goal 0.95</text>`,
    `<rect x="${x(0)}" y="${y(1)}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
    `<text x="${x(0.5)}" y="${HEIGHT - 12}" text-anchor="middle">coverage (fitting intents run without asking)</text>`,
    `<text transform="translate(16 ${y(0.5)}) rotate(-90)" text-anchor="middle">executed precision</text>`,
  );
  Object.entries(curves).forEach(([name, curve], i) => {
    const colour = COLOURS[i % COLOURS.length] as string;
    const points = curve.filter((p): p is [number, number] => p[0] !== null && p[1] !== null).map(([c, p]) => `${round(x(c))},${round(y(p))}`);
    if (points.length > 0) parts.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    const ly = PAD.top + 16 + i * 20;
    parts.push(`<line x1="${WIDTH - PAD.right + 16}" y1="${ly - 4}" x2="${WIDTH - PAD.right + 40}" y2="${ly - 4}" stroke="${colour}" stroke-width="2"/>`, `<text x="${WIDTH - PAD.right + 46}" y="${ly}">${escape(name)}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

export async function runRiskCoveragePlot(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { in: { type: 'string' }, out: { type: 'string' }, title: { type: 'string' } }, strict: true });
  if (!values.in || !values.out) throw new Error(`--in and --out are required; usage: ${USAGE}`);
  const suite = JSON.parse(await readFile(values.in, 'utf8')) as { bench?: unknown; embedder?: unknown; datasets?: Record<string, { risk_coverage?: Curve }> };
  if (suite.bench !== 'resolve-suite' || suite.datasets === undefined) throw new Error(`${values.in} is not a resolve-suite results file; write one with npm run bench -- resolve-suite --out FILE`);
  const curves: Record<string, Curve> = {};
  for (const [name, d] of Object.entries(suite.datasets)) {
    // A curve that never rises above zero (multi-call splits, where one call is always wrong) only hides the axis.
    if (d.risk_coverage?.some(([, p]) => (p ?? 0) > 0)) curves[name] = d.risk_coverage;
  }
  const title = values.title ?? `Risk–coverage by confidence threshold (${String(suite.embedder ?? 'resolver')})`;
  await writeFile(values.out, riskCoverageSvg(curves, title));
  console.error(`wrote ${values.out} (${Object.keys(curves).length} curves)`);
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}
