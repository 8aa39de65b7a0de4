/**
 * What the `format` of a string parameter accepts. JSON Schema's formats (RFC 3339 dates and
 * times, e-mail, URI, UUID, IP addresses) are checked the way common validators check them, so a
 * value the gateway lets through is one the tool's own validation accepts too. `path` is checked
 * elsewhere, against the filesystem globs of the permission context.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const STRING_FORMATS = ['path', 'url', 'uri', 'email', 'date', 'date-time', 'time', 'uuid', 'ipv4', 'ipv6'] as const;
export type StringFormat = (typeof STRING_FORMATS)[number];

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// RFC 3339 §5.6: seconds and the offset are required; "T" may be a space or lower case.
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ]([01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):?[0-5]\d)$/;
// The offset is optional here: a time of day ("14:30:00") is how most tools mean it.
const TIME = /^([01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?$/;
const EMAIL = /^[^\s@"<>()[\]\\,;:]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
/** RFC 5321's limits on an address; longer ones no mail server takes. */
const MAX_EMAIL_CHARS = 254;

/** What to write instead, when `value` is not of the format; undefined when it is (or the format is not checked here). */
export function formatProblem(format: string, value: string): string | undefined {
  switch (format) {
    case 'date':
      return isDate(value) ? undefined : 'must be a date written YYYY-MM-DD, e.g. 2024-03-15';
    case 'date-time': {
      const m = DATE_TIME.exec(value);
      return m !== null && isDate(m[1] ?? '') ? undefined : 'must be a date and time with its offset (RFC 3339), e.g. 2024-03-15T14:30:00Z';
    }
    case 'time':
      return TIME.test(value) ? undefined : 'must be a time written HH:MM:SS (24-hour, an offset may follow), e.g. 14:30:00';
    case 'email':
      return value.length <= MAX_EMAIL_CHARS && EMAIL.test(value) ? undefined : 'must be an e-mail address, e.g. name@example.com';
    case 'uri':
    case 'url':
      return SCHEME.test(value) && URL.canParse(value) ? undefined : 'must be an absolute URL with its scheme, e.g. https://example.com/page';
    case 'uuid':
      return UUID.test(value) ? undefined : 'must be a UUID, e.g. 123e4567-e89b-12d3-a456-426614174000';
    case 'ipv4':
      return isIPv4(value) ? undefined : 'must be an IPv4 address, e.g. 192.0.2.1';
    case 'ipv6':
      return isIPv6(value) ? undefined : 'must be an IPv6 address, e.g. 2001:db8::1';
    default:
      return undefined;
  }
}

function isDate(value: string): boolean {
  const m = DATE.exec(value);
  if (m === null) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // The calendar, not just the digits: 2023-02-29 is no date.
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return days !== undefined && day >= 1 && day <= days;
}
