import { runRiskCoveragePlot } from './resolve/plot-risk-coverage.js';
import { runGatewayBench } from './gateway/run-gateway.js';
import { runHooksBench } from './hooks/run-hooks.js';
import { runKernelBench } from './kernel/run-kernel.js';
import { runBuildTraces } from './prefetch/build-traces.js';
import { runPrefetchBench } from './prefetch/run-prefetch.js';
import { runReplicasBench } from './replicas/run-replicas.js';
import { runLearnedRankerBench } from './resolve/learned-ranker/run-learned-ranker.js';
import { runMultiStepBench } from './resolve/multi-step.js';
import { runResolveBench } from './resolve/run-resolve.js';
import { runSuiteBench } from './resolve/run-suite.js';
import { runSandboxBench } from './sandbox/run-sandbox.js';
import { runSideRequestBench } from './side-request/run-side-request.js';
import { runScaleBench } from './scale/run-scale.js';

const BENCHES: Record<string, (argv: string[]) => Promise<void>> = {
  resolve: runResolveBench,
  'resolve-suite': runSuiteBench,
  'risk-coverage-plot': runRiskCoveragePlot,
  'multi-step': runMultiStepBench,
  'learned-ranker': runLearnedRankerBench,
  'resolve-scale': runScaleBench,
  gateway: runGatewayBench,
  kernel: runKernelBench,
  replicas: runReplicasBench,
  hooks: runHooksBench,
  sandbox: runSandboxBench,
  prefetch: runPrefetchBench,
  'side-request': runSideRequestBench,
  'prefetch-traces': runBuildTraces,
};

const [name, ...rest] = process.argv.slice(2);
const bench = name ? BENCHES[name] : undefined;
if (!bench) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> [options]`);
  process.exitCode = 2;
} else {
  try {
    await bench(rest);
  } catch (error) {
    console.error(`bench ${name}: ${error instanceof Error ? error.message : error}`);
    process.exitCode = 1;
  }
}
