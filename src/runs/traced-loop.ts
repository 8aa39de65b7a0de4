import type { Tracing } from '../contracts/tracing.js';
import type { ChatProvider } from '../llm/types.js';
import type { AgentLoopDeps } from '../loop/agent-loop.js';
import { redactSecrets } from '../audit/redact-secrets.js';

/**
 * The agent loop's spans, put around what it is given (the loop itself knows nothing of them):
 * one per upstream turn (`kiwi.upstream.turn`) and one per intent's resolution
 * (`kiwi.intent.resolve`, with the candidates, the confidence and the gate's decision).
 */

export function tracedProvider(provider: ChatProvider, tracing: Tracing, upstream: string): ChatProvider {
  return {
    kind: provider.kind,
    stream: (request, signal) => tracing.spanIterable('kiwi.upstream.turn', { 'gen_ai.system': provider.kind, 'gen_ai.request.model': request.model, 'kiwi.upstream': upstream }, provider.stream(request, signal)),
    complete: (request, signal) => tracing.span('kiwi.upstream.turn', { 'gen_ai.system': provider.kind, 'gen_ai.request.model': request.model, 'kiwi.upstream': upstream }, () => provider.complete(request, signal)),
    close: () => provider.close(),
  };
}

export function tracedResolve(resolve: AgentLoopDeps['resolve'], tracing: Tracing): AgentLoopDeps['resolve'] {
  return (intent, options) =>
    // Redacted before the cut (the tracing backend redacts again): a secret cut in half no longer has its shape.
    tracing.span('kiwi.intent.resolve', { 'kiwi.intent': redactSecrets(intent).slice(0, 512) }, async (span) => {
      const resolution = await resolve(intent, options);
      span.setAttributes({
        'kiwi.resolution.decision': resolution.status === 'resolved' ? 'run' : 'ask_back',
        'kiwi.resolution.confidence': resolution.confidence,
        'kiwi.resolution.candidates': resolution.candidates.slice(0, 5).map((c) => `${c.tool} ${c.score.toFixed(3)}`),
        ...(resolution.status === 'resolved' ? { 'kiwi.tool': resolution.call.tool } : { 'kiwi.resolution.reason': redactSecrets(resolution.reason).slice(0, 256) }),
        ...(resolution.fallback === undefined ? {} : { 'kiwi.resolution.fallback.model': resolution.fallback.model, 'kiwi.resolution.fallback.outcome': resolution.fallback.outcome, 'kiwi.resolution.fallback.ms': resolution.fallback.ms }),
      });
      return resolution;
    });
}
