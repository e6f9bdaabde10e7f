// `npm test`: runs mocha on the unit tests (src/) and then the integration tests
// (test/), with one real control plane for the run when any integration test is
// selected. Extra arguments go to mocha as they are, so
// `npm test -- test/integration/smoke.test.ts` runs that file alone. The last line
// of output is `N passed, N failed` (see test/support/reporter.cjs); the exit code
// is non-zero on any failure. A run that printed its summary must also end:
// whatever a test left running (a timer, a socket, a retry loop) would keep mocha
// alive until CI's time limit, so after EXIT_GRACE_MS (TEST_EXIT_GRACE_MS) it counts
// as one more failure.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitGraceMs } from './support/exit-grace.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_SPECS = ['src/**/*.test.ts', 'bench/**/*.test.ts', 'test/**/*.test.ts'];
const SUMMARY = /^(\d+) passed, (\d+) failed(, \d+ skipped)?$/;
const EXIT_GRACE_MS = exitGraceMs();

const args = process.argv.slice(2);
// A bare argument that names a path or a glob selects tests; anything else (flags, flag values) is for mocha.
const specs = args.filter((arg) => !arg.startsWith('-') && (arg.includes('*') || existsSync(resolve(root, arg))));
const selected = specs.length > 0 ? specs : DEFAULT_SPECS;
const unitOnly = selected.every((spec) => relative(root, resolve(root, spec)).split('/')[0] === 'src');
const env = { ...process.env, ENVTEST: process.env.ENVTEST ?? (unitOnly ? 'off' : 'on') };

const color = args.some((arg) => /^--(no-)?colou?rs?$|^-c$|^-C$/.test(arg)) ? [] : process.stdout.isTTY ? ['--color'] : ['--no-color'];
const mochaArgs = [join(root, 'node_modules/mocha/bin/mocha.js'), ...color, ...args, ...(specs.length > 0 ? [] : DEFAULT_SPECS)];
const mocha = spawn(process.execPath, mochaArgs, { cwd: root, env, stdio: ['inherit', 'pipe', 'inherit'] });

// Output passes through; we only remember the last line to know whether the
// reporter got to print its summary.
let lastLine = '';
let lingering: NodeJS.Timeout | undefined;
mocha.stdout.on('data', (chunk: Buffer) => {
  process.stdout.write(chunk);
  const lines = chunk.toString('utf8').split('\n').filter((line) => line.trim() !== '');
  lastLine = lines.at(-1) ?? lastLine;
  const summary = SUMMARY.exec(lastLine);
  if (summary && !lingering) lingering = setTimeout(() => notExiting(summary), EXIT_GRACE_MS);
});

/** Mocha reported but did not exit: say so (global-setup.ts has listed what was still open), end it, count it. */
function notExiting([, passed, failed, skipped = '']: RegExpExecArray): void {
  process.stderr.write(`mocha printed its results ${EXIT_GRACE_MS / 1000} s ago and has not exited: a test left something running (listed above); stopping it\n`);
  mocha.removeAllListeners('close');
  mocha.on('close', () => {
    process.stdout.write(`${passed} passed, ${Number(failed) + 1} failed${skipped}\n`);
    process.exit(1);
  });
  mocha.kill('SIGKILL');
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => mocha.kill(signal));
}
mocha.on('close', (code, signal) => {
  clearTimeout(lingering);
  const status = code ?? 128 + (signal === 'SIGINT' ? 2 : 15);
  if (status !== 0 && !SUMMARY.test(lastLine)) {
    // Mocha died before reporting (a test file failed to load, the setup failed, a signal):
    // keep the promised last line, counting the run itself as the one failure.
    process.stderr.write('mocha stopped before it could report results (see above)\n');
    process.stdout.write('0 passed, 1 failed\n');
  }
  process.exit(status);
});
