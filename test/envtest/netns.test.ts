// The start-up sweep of the rig's network namespaces: what a SIGKILLed run
// leaves is removed; a live run's namespaces (owner alive, or processes
// inside, as for a detached `npm run cluster`) and names without an owner are
// kept. Needs root (`ip netns add`); skipped otherwise.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createNetns, deleteNetns, netnsName, parseNetnsList, sweepLeakedNetns } from './netns.ts';
import { waitFor } from '../support/wait.ts';

const run = promisify(execFile);
const here = import.meta.dirname;
const list = async () => parseNetnsList((await run('ip', ['netns', 'list'])).stdout);
const pidsIn = async (name: string) => (await run('ip', ['netns', 'pids', name])).stdout.trim();

describe('network namespace sweep (rig)', function () {
  this.timeout(30_000);
  const made: string[] = [];
  let dir: string;

  before(function () {
    if (process.getuid?.() !== 0) this.skip();
    dir = mkdtempSync(join(tmpdir(), 'netns-sweep-'));
  });
  after(async () => {
    await Promise.all(made.map(deleteNetns));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reads `ip netns list` lines with and without ids', () => {
    assert.deepEqual(parseNetnsList('sapp-12-ab01cd (id: 3)\nsapp-9-00ff00\n\n'), ['sapp-12-ab01cd', 'sapp-9-00ff00']);
  });

  it('removes a run\'s namespaces as it exits on a signal, with its processes still inside', async () => {
    const script = join(dir, 'signalled.ts');
    writeFileSync(script, [
      `import { createNetns, deleteNetnsOnExit, netnsName } from ${JSON.stringify(join(here, 'netns.ts'))};`,
      `import { supervise } from ${JSON.stringify(join(here, 'supervise.ts'))};`,
      'const name = netnsName();',
      'deleteNetnsOnExit([name]);',
      "await createNetns(name, '10.250.0.9');",
      `supervise('sleeper', 'sleep', ['600'], ${JSON.stringify(join(dir, 'signalled.log'))}, undefined, { netns: name });`,
      'console.log(name);',
    ].join('\n'));
    const harness = spawn(process.execPath, ['--no-warnings', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const name = await new Promise<string>((resolve) => harness.stdout.once('data', (b: Buffer) => resolve(b.toString().trim())));
    made.push(name);
    await waitFor('the supervised process inside', async () => (await pidsIn(name)) !== '');
    const exited = new Promise((resolve) => harness.once('exit', resolve));
    harness.kill('SIGTERM');
    await exited;
    assert.ok(!(await list()).includes(name), `${name} is gone once its harness exited on SIGTERM`);
  });

  it('removes the namespace of a SIGKILLed run, keeps a live owner\'s, a detached cluster\'s and unowned names', async () => {
    // A harness that makes a namespace, runs a supervised process in it, and is SIGKILLed.
    const script = join(dir, 'harness.ts');
    writeFileSync(script, [
      `import { createNetns, netnsName } from ${JSON.stringify(join(here, 'netns.ts'))};`,
      `import { supervise } from ${JSON.stringify(join(here, 'supervise.ts'))};`,
      'const name = netnsName();',
      "await createNetns(name, '10.250.0.9');",
      `supervise('sleeper', 'sleep', ['600'], ${JSON.stringify(join(dir, 'sleeper.log'))}, undefined, { netns: name });`,
      'console.log(name);',
    ].join('\n'));
    const harness = spawn(process.execPath, ['--no-warnings', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const killedRunNs = await new Promise<string>((resolve) => harness.stdout.once('data', (b: Buffer) => resolve(b.toString().trim())));
    made.push(killedRunNs);
    assert.match(killedRunNs, new RegExp(`^sapp-${harness.pid}-`), 'the name carries the owner pid');
    await waitFor('the supervised process inside', async () => (await pidsIn(killedRunNs)) !== '');
    harness.kill('SIGKILL');
    await waitFor('the supervised process to die with its harness', async () => (await pidsIn(killedRunNs)) === '');
    assert.ok((await list()).includes(killedRunNs), 'the namespace outlives the killed run');

    // A detached cluster: owner gone (a pid that has exited), a process still inside.
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    const detachedNs = `sapp-${gone.pid}-d00d01`;
    await createNetns(detachedNs, '10.250.0.9');
    made.push(detachedNs);
    const inside = spawn('ip', ['netns', 'exec', detachedNs, 'sleep', '600'], { stdio: 'ignore' });
    await waitFor('the detached process inside', async () => (await pidsIn(detachedNs)) !== '');

    const liveNs = netnsName();
    const unownedNs = 'sapp-0badc0de';
    for (const name of [liveNs, unownedNs]) {
      await createNetns(name, '10.250.0.9');
      made.push(name);
    }

    try {
      const swept = await sweepLeakedNetns();
      assert.ok(swept.includes(killedRunNs), `swept ${swept.join(', ')}`);
      const left = await list();
      assert.ok(!left.includes(killedRunNs), 'the killed run\'s namespace is gone');
      for (const kept of [liveNs, detachedNs, unownedNs]) assert.ok(left.includes(kept), `${kept} is kept`);
    } finally {
      inside.kill('SIGKILL');
    }
  });
});
