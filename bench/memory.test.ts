import assert from 'node:assert/strict';
import { chartMemoryLimitBytes, memoryTable, podHeapMiB } from './memory.ts';

describe('the memory benchmark', () => {
  it('reads the chart\'s memory limit from values.yaml, not the request', () => {
    const values = 'image: x\nresources:\n  requests:\n    cpu: 100m\n    memory: 128Mi\n  limits:\n    memory: 768Mi\n\nother: 1\n';
    assert.equal(chartMemoryLimitBytes(values), 768 * 2 ** 20);
    assert.throws(() => chartMemoryLimitBytes('resources:\n  requests:\n    memory: 1Gi\n'), /no resources.limits.memory/);
  });

  it('gives the operator the heap V8 picks under that limit, and reports the headroom against it', () => {
    assert.equal(podHeapMiB(2 ** 30), 512);
    const table = memoryTable([{ series: 'refused', apps: 230, appBytes: 1_344_902, rssMiB: 90, peakRssMiB: 128, heapUsedMiB: 30, syncSeconds: 4 }], 2 ** 30);
    assert.match(table, /\| largest admitted, refused \(1\.28 MiB\) \| 230 \| 90 \| 128 \| 30 \| 8\.0x \| 4 \|/);
  });
});
