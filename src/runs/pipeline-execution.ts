import type { ChatJournal } from '../kernel/chat-journal.js';
import type { PipelineDeps, PipelineJournal } from '../threads/run-pipeline.js';
import { KiwiError } from '../base/errors.js';
import type { ChatApprovalDeps } from './chat-approvals.js';
import { keep } from './chat-execution.js';
import { openRunScope, runEndEvent } from './run-scope.js';

/**
 * Each run of a pipeline as a kernel execution: the pipeline and its inputs as the input, each
 * stage a step (opened when its thread starts, its result `{thread, status, result}`), the
 * stages' outcomes as the output. Cancelling the execution cancels the stages' threads.
 */
export function pipelineJournal(journal: ChatJournal, options: { stepDeadlineMs: number; kernel: ChatApprovalDeps['kernel'] }): NonNullable<PipelineDeps['journal']> {
  return (run) => {
    const { recorded, signal } = openRunScope(
      { journal, kernel: options.kernel },
      {
        client: run.client,
        input: { pipeline: run.pipeline, inputs: run.inputs },
        labels: { kind: 'pipeline', client: run.client, pipeline: run.pipeline, pipeline_run: run.id },
        stepDeadlineMs: options.stepDeadlineMs,
        cancelReason: (id) => new KiwiError('TOOL_CANCELLED', `pipeline run ${run.id} was cancelled through its execution ${id}`),
      },
    );
    const { execution, steps } = recorded;
    const open = new Map<string, string>();
    const journaled: PipelineJournal = {
      signal,
      written: () => execution.written(),
      stageStarted(stage, thread) {
        open.set(stage.name, steps.open({ tool: stage.directive, arguments: { stage: stage.name } }, { stage: stage.name, thread }));
      },
      stageEnded(outcome) {
        const step = open.get(outcome.stage);
        if (step === undefined) return; // reused from an earlier run, or never started
        open.delete(outcome.stage);
        const body = JSON.stringify({ thread: outcome.thread, status: outcome.status, ...(outcome.failure ? { failure: outcome.failure } : {}), result: keep(outcome.result) });
        steps.settle(step, outcome.status === 'completed' && outcome.failure === undefined ? 'ok' : 'error', body);
      },
      end(outcome) {
        const output = { run: outcome.run, status: outcome.status, stages: outcome.stages.map((s) => ({ ...s, result: keep(s.result) })) };
        const error = outcome.status === 'cancelled' ? 'cancelled' : `stage ${outcome.stages.find((s) => s.status !== 'completed' || s.failure !== undefined)?.stage ?? '?'} did not complete`;
        execution.end(outcome.status, [...steps.cancelOpen(), runEndEvent(outcome.status, { output, error })], { output });
      },
    };
    return journaled;
  };
}
