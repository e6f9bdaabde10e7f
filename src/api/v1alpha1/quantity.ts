// Kubernetes quantities ("12Gi", "500M", "1e9", 4) read as plain numbers, for
// limits the platform sets on sizes (model.size). The grammar is the one the
// CRD's quantity pattern admits; precision beyond a double does not matter for
// comparing sizes against a limit.

export class QuantityError extends Error {
  override name = 'QuantityError';
}

const SUFFIX: Record<string, number> = {
  '': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE])|[eE]([+-]?[0-9]+))?$/;

export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') {
    if (!Number.isFinite(q)) throw new QuantityError(`invalid quantity ${q}`);
    return q;
  }
  const m = QUANTITY.exec(q.trim());
  if (!m) throw new QuantityError(`invalid quantity ${JSON.stringify(q)}: expected a number with an optional suffix, e.g. "500Mi", "12Gi" or "1e9"`);
  const n = Number(m[1]);
  return m[3] !== undefined ? n * 10 ** Number(m[3]) : n * SUFFIX[m[2] ?? '']!;
}

/** A byte count in the largest binary unit that divides it, e.g. "10Gi"; plain bytes otherwise. */
/** `n` bytes for a reader: exact in the largest unit that divides it, else to two decimals ("3.02Gi"). */
export function readableBytes(n: number): string {
  const exact = formatBytes(n);
  if (exact !== String(n)) return exact;
  for (const [unit, size] of [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
    if (n >= size) return `${(n / size).toFixed(2)}${unit}`;
  }
  return exact;
}

export function formatBytes(n: number): string {
  for (const [unit, size] of [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
    if (n >= size && Number.isInteger(n / size)) return `${n / size}${unit}`;
  }
  return String(n);
}
