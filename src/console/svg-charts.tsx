/**
 * Charts drawn on the server as SVG: no script, no inline style (the console's CSP allows
 * neither), colours from the stylesheet through classes.
 */

const WIDTH = 600;
const HEIGHT = 160;

export function BarChart(props: { bars: { label: string; value: number }[]; title: string }) {
  const max = Math.max(1, ...props.bars.map((b) => b.value));
  const step = WIDTH / Math.max(1, props.bars.length);
  return (
    <svg class="chart" viewBox={`0 0 ${WIDTH} ${HEIGHT + 20}`} role="img" aria-label={props.title}>
      <title>{props.title}</title>
      <line class="axis" x1="0" y1={HEIGHT} x2={WIDTH} y2={HEIGHT} />
      {props.bars.map((b, i) => {
        const h = Math.round((b.value / max) * (HEIGHT - 10));
        return (
          <rect class="bar" x={Math.round(i * step + 1)} y={HEIGHT - h} width={Math.max(1, Math.round(step - 2))} height={h}>
            <title>{`${b.label}: ${b.value}`}</title>
          </rect>
        );
      })}
      <text class="label" x="0" y={HEIGHT + 16}>
        {props.bars[0]?.label ?? ''}
      </text>
      <text class="label" x={WIDTH} y={HEIGHT + 16} text-anchor="end">
        {`now · max ${max}`}
      </text>
    </svg>
  );
}

/** A share from 0 to 1 as a filled bar with its percentage; undefined: nothing measured yet. */
export function Gauge(props: { value: number | undefined; title: string }) {
  const share = props.value === undefined ? 0 : Math.min(1, Math.max(0, props.value));
  return (
    <svg class="chart gauge" viewBox={`0 0 ${WIDTH} 60`} role="img" aria-label={props.title}>
      <title>{props.title}</title>
      <rect class="track" x="0" y="10" width={WIDTH} height="24" />
      <rect class="bar" x="0" y="10" width={Math.round(share * WIDTH)} height="24" />
      <text class="label" x="0" y="54">
        {props.value === undefined ? 'nothing measured yet' : `${Math.round(share * 100)}%`}
      </text>
    </svg>
  );
}

/**
 * How much of a limit is gone, as a thin bar: `used`, then `held` (what running requests hold)
 * after it in a lighter shade; the whole bar turns to the danger colour once the limit is reached.
 */
export function ShareBar(props: { used: number; held?: number; limit: number; title: string }) {
  const share = (n: number): number => (props.limit <= 0 ? 1 : Math.min(1, Math.max(0, n / props.limit)));
  const used = Math.round(share(props.used) * WIDTH);
  const held = Math.min(WIDTH - used, Math.round(share(props.held ?? 0) * WIDTH));
  return (
    <svg class={`chart share${props.used >= props.limit ? ' reached' : ''}`} viewBox={`0 0 ${WIDTH} 14`} role="img" aria-label={props.title}>
      <title>{props.title}</title>
      <rect class="track" x="0" y="0" width={WIDTH} height="14" />
      <rect class="bar" x="0" y="0" width={used} height="14" />
      {held === 0 ? null : <rect class="held" x={used} y="0" width={held} height="14" />}
    </svg>
  );
}
