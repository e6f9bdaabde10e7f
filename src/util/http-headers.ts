// Request headers a tenant may not ask the operator to send: Host (which would
// make a sidecar route the request elsewhere, with the operator's identity)
// and the hop-by-hop ones (RFC 9110 section 7.6.1). Read by validation (at
// the spec) and by the outbound client (at the socket).

const FORBIDDEN_EXACT = new Set(['host', 'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Why a header name may not be sent, or undefined when it may. */
export function forbiddenHeader(name: string): string | undefined {
  const n = name.toLowerCase();
  if (FORBIDDEN_EXACT.has(n)) return `header ${JSON.stringify(name)} is not allowed: the operator sets Host and hop-by-hop headers itself`;
  if (n.startsWith('proxy-')) return `header ${JSON.stringify(name)} is not allowed: Proxy-* headers are hop-by-hop`;
  return undefined;
}
