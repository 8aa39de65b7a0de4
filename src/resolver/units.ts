/**
 * Units written after numbers and in parameter descriptions, and conversion between units of
 * one dimension ("10 minutes" for a parameter measured in seconds). Temperatures, calendar
 * months/years and data sizes are not converted: their conversions are not a fixed factor or
 * not agreed on.
 */

export const UNIT_FORMS: ReadonlyMap<string, string> = (() => {
  const table = new Map<string, string>();
  const add = (canonical: string, forms: string): void => {
    for (const f of forms.split(' ')) table.set(f, canonical);
  };
  add('kilogram', 'kg kgs kilogram kilograms kilo kilos');
  add('gram', 'g gram grams gramme grammes');
  add('milligram', 'mg milligram milligrams');
  add('pound', 'lb lbs pound pounds');
  add('ton', 'ton tons tonne tonnes');
  add('kilometer', 'km kms kilometer kilometers kilometre kilometres');
  add('meter', 'm meter meters metre metres');
  add('centimeter', 'cm centimeter centimeters centimetre centimetres');
  add('millimeter', 'mm millimeter millimeters millimetre millimetres');
  add('mile', 'mi mile miles');
  add('foot', 'ft feet foot');
  add('inch', 'inch inches');
  add('second', 's sec secs second seconds');
  add('millisecond', 'ms millisecond milliseconds');
  add('minute', 'min mins minute minutes');
  add('hour', 'h hr hrs hour hours');
  add('day', 'd day days');
  add('week', 'wk week weeks');
  add('month', 'mo month months');
  add('year', 'yr yrs year years');
  add('celsius', 'c °c celsius');
  add('fahrenheit', 'f °f fahrenheit');
  add('kelvin', 'kelvin');
  add('byte', 'b byte bytes');
  add('kilobyte', 'kb kilobyte kilobytes');
  add('megabyte', 'mb megabyte megabytes');
  add('gigabyte', 'gb gigabyte gigabytes');
  add('terabyte', 'tb terabyte terabytes');
  add('hertz', 'hz hertz');
  add('kilohertz', 'khz kilohertz');
  add('megahertz', 'mhz megahertz');
  add('gigahertz', 'ghz gigahertz');
  add('watt', 'w watt watts');
  add('kilowatt', 'kw kilowatt kilowatts');
  add('megawatt', 'mw megawatt megawatts');
  add('volt', 'v volt volts');
  add('liter', 'l liter liters litre litres');
  add('milliliter', 'ml milliliter milliliters millilitre millilitres');
  add('percent', '% percent percentage');
  add('degree', 'deg degree degrees °');
  add('dollar', '$ usd dollar dollars');
  add('euro', '€ eur euro euros');
  add('pixel', 'px pixel pixels');
  add('decibel', 'db decibel decibels');
  add('dbm', 'dbm');
  return table;
})();

/** The canonical units of a written unit ("m/s^2" → meter, second), empty if none is known. */
export function unitParts(written: string): string[] {
  const parts: string[] = [];
  for (const piece of written.toLowerCase().split(/[/^²³\d]+|\s+per\s+/)) {
    const canonical = UNIT_FORMS.get(piece);
    if (canonical !== undefined) parts.push(canonical);
  }
  return parts;
}

/** Base-unit factors of the units that convert by a fixed factor, per dimension. */
const FACTORS: ReadonlyMap<string, readonly [string, number]> = new Map([
  ['second', ['time', 1]],
  ['millisecond', ['time', 0.001]],
  ['minute', ['time', 60]],
  ['hour', ['time', 3600]],
  ['day', ['time', 86_400]],
  ['week', ['time', 604_800]],
  ['meter', ['length', 1]],
  ['kilometer', ['length', 1000]],
  ['centimeter', ['length', 0.01]],
  ['millimeter', ['length', 0.001]],
  ['mile', ['length', 1609.344]],
  ['foot', ['length', 0.3048]],
  ['inch', ['length', 0.0254]],
  ['gram', ['mass', 1]],
  ['kilogram', ['mass', 1000]],
  ['milligram', ['mass', 0.001]],
  ['pound', ['mass', 453.59237]],
  ['ton', ['mass', 1_000_000]],
  ['hertz', ['frequency', 1]],
  ['kilohertz', ['frequency', 1e3]],
  ['megahertz', ['frequency', 1e6]],
  ['gigahertz', ['frequency', 1e9]],
  ['watt', ['power', 1]],
  ['kilowatt', ['power', 1e3]],
  ['megawatt', ['power', 1e6]],
  ['liter', ['volume', 1]],
  ['milliliter', ['volume', 0.001]],
]);

/**
 * `value` in `from` expressed in the one unit of `targets` of the same dimension, or undefined
 * when there is no such single unit (or nothing to convert).
 */
export function convertUnit(value: number, from: string, targets: ReadonlySet<string>): { value: number; unit: string } | undefined {
  const source = FACTORS.get(from);
  if (source === undefined || targets.has(from)) return undefined;
  const same = [...targets].filter((t) => FACTORS.get(t)?.[0] === source[0]);
  const to = same.length === 1 ? same[0] : undefined;
  const target = to === undefined ? undefined : FACTORS.get(to);
  if (to === undefined || target === undefined) return undefined;
  return { value: Number(((value * source[1]) / target[1]).toPrecision(12)), unit: to };
}
