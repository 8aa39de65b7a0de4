import { defineConfig } from 'vitest/config';

/**
 * Two projects, one rule, by file name:
 *
 *   test/**\/*.int.test.ts  →  integration: the file starts something outside the test's own
 *                              code: a gateway (serveDemoGateway, serveGateway, openGateway),
 *                              a database (openKernel, kernelBackends, PGlite, Postgres), a
 *                              child process (the CLI as a process, an MCP server, a sandboxed
 *                              or subprocess tool, git), or it waits on the real clock for
 *                              seconds. These run with test/setup/global-setup.ts, which builds
 *                              the demo index, a migrated kernel database and one Postgres
 *                              server once for the run (see test/helpers/run-resources.ts).
 *   test/**\/*.test.ts      →  unit: everything else, in-process and fast (a local HTTP server
 *                              on 127.0.0.1 and temporary files are fine); the whole project
 *                              runs in well under 30 s (`npm run test:unit`).
 *
 * A new test file that starts one of those things, or takes more than a second or two on its
 * own, is named `*.int.test.ts`. The reporter below prints the slowest files of every run.
 */
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // The machine has two cores; subprocess and MCP tests spawn real children.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/setup/slowest-files-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts'],
          // One module cache per worker for all its files: importing src/ again for each of ~130
          // small files cost more than their tests. The test files themselves are still
          // evaluated afresh; what a unit test changes in a shared module it puts back.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          globalSetup: ['./test/setup/global-setup.ts'],
        },
      },
    ],
  },
});
