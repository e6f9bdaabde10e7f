// The worker thread of bench/health-sampler.ts: fetches `url` every `everyMs`
// until told to stop, then posts each latency and the count of failed probes.
import { parentPort, workerData } from 'node:worker_threads';
import type { HealthSamplerData, HealthSamples } from './health-sampler.ts';
import { sleep } from './stats.ts';

const { url, everyMs, timeoutMs } = workerData as HealthSamplerData;
let running = true;
parentPort!.once('message', () => { running = false; });

// Unmeasured: the first fetch of a thread loads its HTTP client, about 0.1-0.3 s on a loaded machine,
// which would be one slow probe in every phase (most of the p99 of a short one).
await fetch(url, { signal: AbortSignal.timeout(timeoutMs) }).then((res) => res.text()).catch(() => undefined);
parentPort!.postMessage('sampling');

const at: number[] = [], ms: number[] = [];
let failures = 0;
while (running) {
  const started = performance.now();
  at.push(performance.timeOrigin + started);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.text();
    if (!res.ok) failures++;
  } catch {
    failures++;
  }
  const took = performance.now() - started;
  ms.push(took);
  await sleep(Math.max(0, everyMs - took));
}
parentPort!.postMessage({ at, ms, failures } satisfies HealthSamples);
