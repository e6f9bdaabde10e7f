// `npm test` (test/run.ts) ends even when a test leaves something running, and
// counts that as a failure: a hung run would otherwise wait for CI's time limit.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

function runTests(spec: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'test/run.ts'), spec], {
      cwd: root, env: { ...process.env, ENVTEST: 'off', TEST_EXIT_GRACE_MS: '3000' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '', stderr = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c; });
    child.stderr.on('data', (c: Buffer) => { stderr += c; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const lastLine = (out: string) => out.trim().split('\n').at(-1);

describe('npm test, when a test leaves something running', function () {
  this.timeout(60_000);

  it('ends mocha after the grace, names what was open, and counts one more failure', async () => {
    const { code, stdout, stderr } = await runTests('test/fixtures/runner/leaves-a-timer.spec.ts');
    assert.equal(code, 1);
    assert.match(stdout, /^1 passed, 0 failed$/m, "mocha's own summary came first");
    assert.equal(lastLine(stdout), '1 passed, 1 failed');
    assert.match(stderr, /still running 1 s after the control plane stopped; open: \[.*"Timeout".*\]/);
    assert.match(stderr, /made since the control plane stopped, still alive:\n\d+× Timeout\n.*leaves-a-timer\.spec\.ts/, 'where the timer was made');
    assert.match(stderr, /has not exited: a test left something running/);
  });

  it('ends as mocha reported when nothing is left running (the control)', async () => {
    const { code, stdout, stderr } = await runTests('test/fixtures/runner/ends.spec.ts');
    assert.equal(code, 0);
    assert.equal(lastLine(stdout), '1 passed, 0 failed');
    assert.doesNotMatch(stderr, /still running|has not exited/);
  });
});
