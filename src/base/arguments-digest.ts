import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/**
 * A call's arguments as one short string: what a person saw when asked to approve the call, so
 * that a grant binds to exactly those arguments (kernel/signals.ts), whatever order the keys came in.
 */
export function argumentsDigest(args: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(args ?? null)).digest('hex')}`;
}
