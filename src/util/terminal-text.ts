// Text from the cluster (a Knative or admission message, a name) printed on a
// terminal: escape sequences in it must not move the cursor, recolour or
// retitle the user's terminal. As kubectl does (cli-runtime printers
// EscapeTerminal: ESC as "^[", CR as "\r"), and the other C0 and C1 controls
// as \xNN too (a C1 CSI, 0x9b, starts a sequence on some terminals). Newlines
// and tabs stay.

const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function escapeTerminal(text: string): string {
  return text.replace(CONTROL, (c) => (c === '\u001b' ? '^[' : c === '\r' ? '\\r' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}

/** `value` with every string in it escaped (escapeTerminal), for a view that adds escape codes of its own afterwards. */
export function escapeTerminalDeep<T>(value: T): T {
  if (typeof value === 'string') return escapeTerminal(value) as T;
  if (Array.isArray(value)) return value.map(escapeTerminalDeep) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeTerminalDeep(v)])) as T;
  return value;
}
