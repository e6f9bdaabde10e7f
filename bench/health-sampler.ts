// Probes the operator's /healthz from a worker thread, as the kubelet probes
// from its own process: the benchmark's main thread is busy generating the
// noisy namespace's writes, and its event loop's delays are the benchmark's,
// not the operator's.
import { Worker } from 'node:worker_threads';

export interface HealthSamplerData { url: string; everyMs: number; timeoutMs: number }
/** Each probe's start (ms since the epoch) and latency (ms), failed ones included, and how many failed (not 2xx, or no answer within the timeout). */
export interface HealthSamples { at: number[]; ms: number[]; failures: number }

/**
 * Fetches `url` every `everyMs` until stop(), which resolves with the samples; `sampling` resolves once
 * the worker has warmed up its HTTP client (one unmeasured fetch) and the first measured probe starts.
 */
export function sampleHealth(o: HealthSamplerData): { sampling: Promise<void>; stop: () => Promise<HealthSamples> } {
  const worker = new Worker(new URL('./health-sampler-worker.ts', import.meta.url), { workerData: o });
  let started!: () => void;
  const sampling = new Promise<void>((resolve) => { started = resolve; });
  const samples = new Promise<HealthSamples>((resolve, reject) => {
    worker.on('message', (m: 'sampling' | HealthSamples) => {
      if (m === 'sampling') return started();
      resolve(m);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
  return { sampling, stop: async () => { worker.postMessage('stop'); return samples; } };
}
