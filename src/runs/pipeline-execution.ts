import { KiwiError } from '../errors.js';
import type { ChatJournal } from '../kernel/chat-journal.js';
import type { PipelineDeps, PipelineJournal } from '../threads/run-pipeline.js';
import { CHAT_AGENT_ID, keep } from './chat-execution.js';
import { executionSteps } from './execution-steps.js';

/**
 * Each run of a pipeline as a kernel execution: the pipeline and its inputs as the input, each
 * stage a step (opened when its thread starts, its result `{thread, status, result}`), the
 * stages' outcomes as the output. Cancelling the execution cancels the stages' threads.
 */
export function pipelineJournal(journal: ChatJournal, options: { stepDeadlineMs: number }): NonNullable<PipelineDeps['journal']> {
  return (run) => {
    const controller = new AbortController();
    const execution = journal.begin({
      client: run.client,
      agentId: CHAT_AGENT_ID,
      input: { pipeline: run.pipeline, inputs: run.inputs },
      labels: { kind: 'pipeline', client: run.client, pipeline: run.pipeline, pipeline_run: run.id },
      onCancel() {
        controller.abort(new KiwiError('TOOL_CANCELLED', `pipeline run ${run.id} was cancelled through its execution ${execution.id}`));
      },
    });
    const steps = executionSteps(execution, options.stepDeadlineMs);
    const open = new Map<string, string>();
    const journaled: PipelineJournal = {
      signal: controller.signal,
      written: () => execution.written(),
      stageStarted(stage, thread) {
        open.set(stage.name, steps.open({ tool: stage.directive, arguments: { stage: stage.name } }, { stage: stage.name, thread }));
      },
      stageEnded(outcome) {
        const step = open.get(outcome.stage);
        if (step === undefined) return; // reused from an earlier run, or never started
        open.delete(outcome.stage);
        const body = JSON.stringify({ thread: outcome.thread, status: outcome.status, result: keep(outcome.result) });
        steps.settle(step, outcome.status === 'completed' ? 'ok' : 'error', body);
      },
      end(outcome) {
        const output = { run: outcome.run, status: outcome.status, stages: outcome.stages.map((s) => ({ ...s, result: keep(s.result) })) };
        const last =
          outcome.status === 'completed'
            ? { type: 'execution.completed', payload: { output } }
            : outcome.status === 'cancelled'
              ? { type: 'execution.cancelled', payload: { reason: 'cancelled' } }
              : { type: 'execution.failed', payload: { error: `stage ${outcome.stages.find((s) => s.status !== 'completed')?.stage ?? '?'} did not complete` } };
        execution.end(outcome.status, [...steps.cancelOpen(), last], output);
      },
    };
    return journaled;
  };
}
