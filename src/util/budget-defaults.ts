// The defaults of the operator's budgets, stated once: the flags' defaults
// (config.ts) and the runners built without flags (their own defaults) both
// read them. Apart from the runners, so the kubectl plugin, which reads
// config.ts on every command, does not load them.

import type { SlotLimits } from './fair-slots.ts';

/** Warmup tasks running at once, per namespace and in all. */
export const DEFAULT_WARMUP_SLOTS: SlotLimits = { perNamespace: 8, total: 64 };
/**
 * Analysis rounds running at once, per namespace and in all. Rounds wait on Prometheus, not on the CPU:
 * with continuous rounds (a cadence of 10 s at 1,000 apps is 100 rounds a second) 4 in all held the
 * throughput near 75 rounds a second (docs/benchmarks.md, "Continuous analysis"); the query rate per
 * namespace (DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE) is what bounds a namespace's load on Prometheus.
 */
export const DEFAULT_ANALYSIS_SLOTS: SlotLimits = { perNamespace: 4, total: 16 };
/**
 * Prometheus queries one namespace's analysis rounds send per second: 100 apps gated on the SRE workbook's
 * four windows at a 30 s cadence send 13; a namespace past it waits, not the others (util/query-rate.ts).
 */
export const DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE = 20;
/** The burst a namespace may send after a quiet spell, in seconds of its rate. */
export const ANALYSIS_BURST_SECONDS = 5;
/**
 * Events waiting to be written, in all: more are dropped (counted, and logged at most once a minute):
 * events are best effort, memory is not. An entry is about half a kilobyte, so a burst of 10,000 apps
 * each saying one thing while the API server is slow (measured: 6,396 of 10,000 dropped at 1,000) is kept.
 */
export const MAX_PENDING_EVENTS = 10_000;
/** One namespace's share of the pending Event writes (--max-pending-events-per-namespace). */
export const DEFAULT_MAX_PENDING_EVENTS_PER_NAMESPACE = 1_000;
