// Mocha's spec reporter, plus one machine-readable line printed last, after the
// global teardown has stopped the control plane: `N passed, N failed[, N skipped]`.
// CommonJS because mocha loads custom reporters with require().
'use strict';
const { reporters } = require('mocha');

class SummaryReporter extends reporters.Spec {
  // Mocha calls done() after the run and the global teardown, so nothing prints after this line.
  done(failures, exit) {
    const { passes = 0, failures: failedTests = 0, pending = 0 } = this.stats ?? {};
    const failed = Math.max(failedTests, failures); // a failed global teardown counts too
    const skipped = pending > 0 ? `, ${pending} skipped` : '';
    process.stdout.write(`${passes} passed, ${failed} failed${skipped}\n`, () => exit(failures));
  }
}

module.exports = SummaryReporter;
