/**
 * A policy rule's `schedule` (§15.3): `<days> <HH:MM>-<HH:MM> <IANA zone>`. Days are `Mon-Fri`
 * (a range may wrap: `Fri-Mon`), `Mon,Wed,Fri`, or one day, named `Sun` … `Sat`. The start is
 * inclusive, the end exclusive; a start after the end runs overnight; equal ones never match.
 * The day is the one in the zone at the moment checked.
 */

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** The matcher, or what is wrong with the text. */
export function parseSchedule(text: string): ((at: Date) => boolean) | string {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 3) return `${JSON.stringify(text)} is not "<days> <HH:MM>-<HH:MM> <zone>", e.g. "Mon-Fri 09:00-17:00 UTC"`;
  const [daysText, timesText, zone] = parts as [string, string, string];
  const days = parseDays(daysText);
  if (typeof days === 'string') return days;
  const times = /^(\d\d):(\d\d)-(\d\d):(\d\d)$/.exec(timesText);
  const minutes = times === null ? [] : [Number(times[1]) * 60 + Number(times[2]), Number(times[3]) * 60 + Number(times[4])];
  const [start, end] = minutes as [number, number];
  if (times === null || Number(times[1]) > 23 || Number(times[3]) > 23 || Number(times[2]) > 59 || Number(times[4]) > 59) return `${JSON.stringify(timesText)} is not a time range like 09:00-17:00`;
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  } catch {
    return `${JSON.stringify(zone)} is not a time zone: use an IANA name like UTC or Europe/Paris`;
  }
  return (at) => {
    const parts = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, p.value]));
    const day = DAYS.indexOf(parts['weekday'] ?? '');
    const now = Number(parts['hour']) * 60 + Number(parts['minute']);
    if (!days.has(day) || start === end) return false;
    return start < end ? now >= start && now < end : now >= start || now < end;
  };
}

function parseDays(text: string): Set<number> | string {
  const index = (name: string): number => DAYS.indexOf(name);
  const range = /^([A-Z][a-z]{2})-([A-Z][a-z]{2})$/.exec(text);
  if (range !== null) {
    const from = index(range[1] as string);
    const to = index(range[2] as string);
    if (from === -1 || to === -1) return `${JSON.stringify(text)}: days are Sun, Mon, Tue, Wed, Thu, Fri, Sat`;
    const out = new Set<number>();
    for (let d = from; ; d = (d + 1) % 7) {
      out.add(d);
      if (d === to) break;
    }
    return out;
  }
  const names = text.split(',');
  const out = new Set(names.map(index));
  if (out.has(-1)) return `${JSON.stringify(text)}: days are Sun, Mon, Tue, Wed, Thu, Fri, Sat (a range like Mon-Fri, or a list like Mon,Wed,Fri)`;
  return out;
}
