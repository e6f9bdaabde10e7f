// What ingress.retries.retryOn may hold: what Istio's validation accepts in a
// VirtualService's retries.retryOn (istio.io/istio pkg/config/validation/
// validation.go, validateHTTPRetry), each comma-separated condition either one
// of Envoy's retry policies Istio lists (supportedRetryOnPolicies) or an HTTP
// status code Go's net/http names (http.StatusText). Anything else istiod
// refuses, and the app would never get its route: the schema refuses it first.

/** Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on policies, as Istio lists them. */
export const RETRY_ON_POLICIES = [
  '5xx', 'gateway-error', 'reset', 'reset-before-request', 'connect-failure', 'retriable-4xx', 'refused-stream',
  'retriable-status-codes', 'retriable-headers', 'envoy-ratelimited', 'http3-post-connect-failure',
  'cancelled', 'deadline-exceeded', 'internal', 'resource-exhausted', 'unavailable',
] as const;

/** The status codes Go's net/http.StatusText names (Go 1.26). */
export const RETRY_ON_STATUS_CODES = [
  100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307, 308,
  400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423,
  424, 425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
] as const;

/** A CEL rule over the retryOn string: every condition is a policy or a named status code. */
export const RETRY_ON_RULE = {
  rule: `self.split(',').all(c, c in [${[...RETRY_ON_POLICIES, ...RETRY_ON_STATUS_CODES.map(String)].map((c) => `'${c}'`).join(', ')}])`,
  message: `each comma-separated condition must be one of Envoy's retry policies (${RETRY_ON_POLICIES.join(', ')}) or an HTTP status code such as 503`,
};
