/** Hooks as directives and the policy declare them (registry/ and policy/ parse them; hook-runner.ts runs them). */
/** What a hook does when its condition holds. */
export type HookAction =
  | { kind: 'directive'; name: string; inputs: Record<string, string> }
  | { kind: 'deny'; reason: string }
  | { kind: 'require_approval' }
  | { kind: 'annotate'; text: string }
  /** POSTs the event as JSON to `url` (written by the policy's author, so trusted as an address). */
  | { kind: 'webhook'; url: string };

export interface DirectiveHook {
  /** The condition as written (CEL, or with Kiwi's and/or/not). */
  when: string;
  /** Where it was written, for the hook's own errors. */
  line: number;
  action: HookAction;
}
