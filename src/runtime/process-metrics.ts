// The process's own series (CPU, resident memory, heap, file descriptors),
// under the names prom-client's and Go's process collectors use, read when
// /metrics is scraped and at no other time. prom-client's
// collectDefaultMetrics is not used: its event-loop-lag monitor wakes the
// process every 10 ms and its GC observer runs on every collection, which
// was most of the operator's CPU while idle (docs/benchmarks.md). Event-loop
// lag comes from Node's own delay histogram (perf_hooks), sampled every 100 ms
// by a timer in libuv: no JavaScript runs until a scrape reads it.

import { readdirSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, type Registry } from 'prom-client';

export function registerProcessMetrics(registry: Registry): void {
  const registers = [registry];
  let last = process.cpuUsage();
  // The first of the three counters reads the CPU time for all of them: the
  // registry collects in registration order, before it reads any value.
  const user: Counter = new Counter({
    name: 'process_cpu_user_seconds_total', help: 'Total user CPU time spent in seconds.', registers,
    collect() {
      const now = process.cpuUsage();
      const u = (now.user - last.user) / 1e6;
      const s = (now.system - last.system) / 1e6;
      last = now;
      user.inc(u);
      system.inc(s);
      total.inc(u + s);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers });
  const startSeconds = Math.round((Date.now() - performance.now()) / 1000);
  new Gauge({ name: 'process_start_time_seconds', help: 'Start time of the process since unix epoch in seconds.', registers, collect() { this.set(startSeconds); } });
  new Gauge({ name: 'process_resident_memory_bytes', help: 'Resident memory size in bytes.', registers, collect() { this.set(process.memoryUsage.rss()); } });
  new Gauge({
    name: 'process_open_fds', help: 'Number of open file descriptors.', registers,
    collect() {
      try {
        this.set(readdirSync('/proc/self/fd').length);
      } catch {
        // not Linux: the series stays at its last value
      }
    },
  });
  registerEventLoopLag(registers);
  const heap = () => process.memoryUsage();
  new Gauge({ name: 'nodejs_heap_size_total_bytes', help: 'Process heap size from Node.js in bytes.', registers, collect() { this.set(heap().heapTotal); } });
  new Gauge({ name: 'nodejs_heap_size_used_bytes', help: 'Process heap size used from Node.js in bytes.', registers, collect() { this.set(heap().heapUsed); } });
  new Gauge({ name: 'nodejs_external_memory_bytes', help: 'Node.js external memory size in bytes.', registers, collect() { this.set(heap().external); } });
}

/**
 * How late the main event loop ran a 100 ms timer since the last scrape, under
 * prom-client's names: a reconcile that holds the loop shows here, and in the
 * victim namespace's latency.
 */
function registerEventLoopLag(registers: Registry[]): void {
  const delay = monitorEventLoopDelay({ resolution: 100 });
  delay.enable();
  let snapshot = { max: 0, mean: 0, p50: 0, p90: 0, p99: 0 };
  const seconds = (ns: number) => (Number.isFinite(ns) ? ns / 1e9 : 0);
  const gauge = (name: string, help: string, read: () => number, first = false) => new Gauge({
    name, help, registers,
    collect() {
      if (first) {
        // The first of the series takes the snapshot for all, then starts a new interval.
        snapshot = { max: seconds(delay.max), mean: seconds(delay.mean), p50: seconds(delay.percentile(50)), p90: seconds(delay.percentile(90)), p99: seconds(delay.percentile(99)) };
        delay.reset();
      }
      this.set(read());
    },
  });
  gauge('nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay since the last scrape.', () => snapshot.max, true);
  gauge('nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays since the last scrape.', () => snapshot.mean);
  gauge('nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays since the last scrape.', () => snapshot.p50);
  gauge('nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays since the last scrape.', () => snapshot.p90);
  gauge('nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays since the last scrape.', () => snapshot.p99);
}
