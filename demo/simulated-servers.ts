// The two HTTP servers the demo simulates in its own process, on loopback
// ports: the model server that answers the operator's warmup requests
// (switchable to 503, for the failed warmup step) and a Prometheus stand-in
// that answers every instant query with one passing sample (for the automated
// analysis steps: a success rate, or the LLM step's latencies and error rate). On a cluster warmup goes to the revision's private Service
// and queries to the platform's Prometheus; here both are SIMULATED.

import { LoopbackServer, promVector } from '../test/support/http-server.ts';

/** The name the operator knows the Prometheus stand-in by (`--analysis-providers main=<url>`). */
export const ANALYSIS_PROVIDER = 'main';
/** The success rate the Prometheus stand-in reports: above the story's 0.99 minimum. */
export const SIMULATED_SUCCESS_RATE = 0.998;

/** A model server answering predictions after `answerMs`, or 503 while `failing` (a model that does not load). */
export class ModelServer extends LoopbackServer {
  failing = false;

  constructor(answerMs = 150) {
    super();
    this.handler = (_req, res) => {
      if (this.failing) {
        res.statusCode = 503;
        res.end('model not loaded');
        return;
      }
      setTimeout(() => res.end('{"predictions": [0]}'), answerMs);
    };
  }
}

/** What the stand-in answers the LLM step's checks (examples/llm-chat-canary.yaml), by the metric the query reads: a healthy LLM. */
export const SIMULATED_LLM_FIGURES: ReadonlyArray<readonly [RegExp, number]> = [
  [/time_to_first_token/, 0.42], // seconds, p95
  [/inter_token_latency/, 0.031], // seconds, p95
  [/istio_requests_total/, 0.002], // share of 5xx
];

/** Prometheus' instant-query API answering `value` to every query (the LLM checks' metrics their SIMULATED_LLM_FIGURES). */
export class PrometheusStandIn extends LoopbackServer {
  constructor(value = SIMULATED_SUCCESS_RATE) {
    super();
    this.handler = (req, res) => {
      const query = new URL(req.url, 'http://prometheus').searchParams.get('query') ?? '';
      res.end(promVector(SIMULATED_LLM_FIGURES.find(([metric]) => metric.test(query))?.[1] ?? value));
    };
  }

  /** The PromQL of every query received, in order. */
  queries(): string[] {
    return this.requests.map((r) => new URL(r.url, 'http://prometheus').searchParams.get('query') ?? '');
  }
}
