// The noisy-neighbour benchmark says where the machine's CPU went in each phase.
import assert from 'node:assert/strict';
import { groupCpu, machineCpu } from './proc.ts';

describe('benchmark process accounting', () => {
  it('counts the machine busy in everything but idle and iowait (/proc/stat, clock ticks of 1/100 s)', () => {
    // user nice system idle iowait irq softirq steal
    const { busySeconds, totalSeconds } = machineCpu('cpu  100 20 30 400 50 5 10 15 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n');
    assert.equal(busySeconds, (100 + 20 + 30 + 5 + 10 + 15) / 100);
    assert.equal(totalSeconds, 630 / 100);
  });

  it('sums the CPU of each group of processes, a process that cannot be read counting 0', () => {
    const burn = () => { const until = performance.now() + 50; while (performance.now() < until) { /* CPU */ } };
    burn();
    const cpu = groupCpu({ self: [process.pid], selfAndGone: [process.pid, 2 ** 22 + 7, undefined], none: [] });
    assert.ok(cpu.self! > 0, `this process used ${cpu.self} s`);
    assert.ok(cpu.selfAndGone! >= cpu.self!);
    assert.equal(cpu.none, 0);
  });
});
