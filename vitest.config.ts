import { defineConfig } from 'vitest/config';

/**
 * Two projects, one rule, by file name:
 *
 *   test/**\/*.int.test.ts  →  integration: the file boots a gateway (serveDemoGateway,
 *                              serveGateway, openGateway, `kiwi serve`), opens a kernel database
 *                              (openKernel, kernelBackends, PGlite, Postgres), runs a program of
 *                              its own as a child process (`kiwi` itself, an MCP server over stdio,
 *                              bwrap, git), or takes more than about two seconds on its own (a
 *                              real model, real timeouts). These run after test/setup/global-setup.ts,
 *                              which makes the demo index, a migrated kernel database, one Postgres
 *                              server and a compiled CLI once per run (test/helpers/run-resources.ts).
 *   test/**\/*.test.ts      →  unit: everything else, in-process and quick. A local HTTP server
 *                              on 127.0.0.1, temporary files, or a tool that runs as a short
 *                              child process through the proxy are fine; the whole project runs
 *                              in under 30 s (`npm run test:unit`).
 *
 * Every file runs with a HOME of its own, empty (test/setup/isolate-home.ts): no test sees the
 * account's `~/.ai`, nor another file's.
 *
 * A new test file that does one of the things above is named `*.int.test.ts`. The reporter
 * below prints the slowest files of every run: a unit file that shows up there moves.
 */
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Three on the two cores: the integration files spend much of their time waiting on children,
    // servers and databases, so a third worker fills it (quiet, 264–299 s against 307 s with two;
    // with both cores kept busy, 410 s against 460 s). A fourth overloads the machine.
    maxWorkers: 3,
    reporters: ['default', './test/setup/slowest-files-reporter.ts'],
    // Transformed modules kept on disk (node_modules/.experimental-vitest-cache) between runs:
    // a second run imports src/ in about two thirds of the time. Keyed by the file's content.
    experimental: { fsModuleCache: true },
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
          setupFiles: ['./test/setup/isolate-home.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          // These chain real processes (`kiwi` runs, replicas, PGlite opens): on a loaded machine
          // one such chain took 19.6 s, too near the unit tests' 20 s to say anything but "slow".
          testTimeout: 60_000,
          globalSetup: ['./test/setup/global-setup.ts'],
          // Each test process loads the USE-lite model once, not once per gateway.
          setupFiles: ['./test/setup/isolate-home.ts', './test/setup/hold-use-lite.ts'],
          // As for unit: src/ imported once per worker (it cost ~2 s a file here). A file that
          // boots a gateway closes it in afterAll; what it changes in a shared module it puts back.
          isolate: false,
        },
      },
    ],
  },
});
