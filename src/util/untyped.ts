// Reading parsed JSON or YAML whose shape is not yet known (a kubeconfig, an
// exec plugin's answer): a field that is not what is expected reads as absent.

/** An object's fields, or none for anything that is not a plain object. */
export function record(x: unknown): Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>) : {};
}

/** A non-empty string, else undefined. */
export function text(x: unknown): string | undefined {
  return typeof x === 'string' && x !== '' ? x : undefined;
}
