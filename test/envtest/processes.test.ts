import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { descendants, killLeftovers, processInfo, rigProcesses, stillRunning } from './processes.ts';

describe('a rig\'s processes, found in /proc', () => {
  let root: string;
  const started: ChildProcess[] = [];
  beforeEach(() => { root = mkdtempSync(join(tmpdir(), 'rig-procs-')); });
  afterEach(() => {
    for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });
  const run = (program: string, env: Record<string, string>) => {
    const c = spawn(program, ['600'], { env: { PATH: '/usr/bin:/bin', ...env }, stdio: 'ignore' });
    started.push(c);
    return c;
  };

  it('finds a rig binary that names the rig\'s directory only in its environment, and not a user\'s program pointed at the rig, nor another rig\'s', () => {
    const bin = join(root, 'bin');
    mkdirSync(bin);
    copyFileSync('/bin/sleep', join(bin, 'agent'));
    const rig = join(root, 'rig');
    const agent = run(join(bin, 'agent'), { KUBECONFIG: `${rig}/netns.kubeconfig` });
    const users = run('/bin/sleep', { KUBECONFIG: `${rig}/kubeconfig` });
    const other = run(join(bin, 'agent'), { KUBECONFIG: `${rig}-2/netns.kubeconfig` });
    assert.ok(processInfo(users.pid!) && processInfo(other.pid!));
    assert.deepEqual(rigProcesses(rig, [bin]).map((p) => p.pid), [agent.pid]);
  });

  it('kills what is left and says what it was; a process already gone is not listed', async () => {
    const bin = join(root, 'bin');
    mkdirSync(bin);
    copyFileSync('/bin/sleep', join(bin, 'agent'));
    const agent = run(join(bin, 'agent'), { RIG: `${root}/rig/x` });
    const exited = new Promise((resolve) => agent.once('exit', resolve));
    const found = rigProcesses(`${root}/rig`, [bin]);
    assert.deepEqual(killLeftovers(found), [`${agent.pid} ${join(bin, 'agent')} 600`]);
    await exited;
    assert.equal(found.some(stillRunning), false);
    assert.deepEqual(killLeftovers(found), []);
  });

  it('lists a process\'s descendants', () => {
    const child = run('/bin/sleep', {});
    assert.ok(descendants(process.pid).some((p) => p.pid === child.pid));
  });
});
