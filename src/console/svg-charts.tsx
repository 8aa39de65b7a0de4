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
