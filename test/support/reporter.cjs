// Mocha's spec reporter, plus the time each test file took (the slowest first,
// to see where a run's minutes go) and one machine-readable line printed last,
// after the global teardown has stopped the control plane:
// `N passed, N failed[, N skipped]`.
// CommonJS because mocha loads custom reporters with require().
'use strict';
const { relative } = require('node:path');
const { reporters, Runner } = require('mocha');

const SLOWEST = 10;

class SummaryReporter extends reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    /** file -> ms spent in its tests and hooks */
    this.fileMs = new Map();
    let file, since;
    const close = () => {
      if (file) this.fileMs.set(file, (this.fileMs.get(file) ?? 0) + (Date.now() - since));
      file = undefined;
    };
    runner.on(Runner.constants.EVENT_SUITE_BEGIN, (suite) => {
      if (!suite.file || suite.file === file) return;
      close();
      file = suite.file;
      since = Date.now();
    });
    runner.on(Runner.constants.EVENT_RUN_END, close);
  }

  // Mocha calls done() after the run and the global teardown, so nothing prints after this line.
  done(failures, exit) {
    const { passes = 0, failures: failedTests = 0, pending = 0 } = this.stats ?? {};
    const failed = Math.max(failedTests, failures); // a failed global teardown counts too
    const skipped = pending > 0 ? `, ${pending} skipped` : '';
    const slowest = [...this.fileMs].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
    const lines = slowest.length > 1
      ? ['', 'slowest test files:', ...slowest.map(([f, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${relative(process.cwd(), f)}`), '']
      : [];
    process.stdout.write([...lines, `${passes} passed, ${failed} failed${skipped}`].join('\n') + '\n', () => exit(failures));
  }
}

module.exports = SummaryReporter;
