// Reading the API server's JSON without holding more than one object as text.
// A LIST page is read as a stream: each element of its items array is handed
// on as its own bytes as soon as it is complete, so memory is bounded by one
// object, not by a page (a page of 500 objects of 1.3 MiB is past V8's
// largest string and fails outright when read whole); a page that ends
// within a small bound is parsed whole instead, natively. And an object's
// top-level members can be found without parsing them, so a reader parses
// only the members it keeps and skips the others (a large spec that did not
// change, managedFields, annotations). Strings, the bulk of a large object,
// are skipped with Buffer.indexOf (native), not byte by byte.

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_BRACE = 0x7b, CLOSE_BRACE = 0x7d, OPEN_BRACKET = 0x5b, CLOSE_BRACKET = 0x5d, COMMA = 0x2c, COLON = 0x3a;

/** The offset of the quote that closes the string whose opening quote is at `start`. */
function stringEnd(buf: Buffer, start: number): number {
  let from = start + 1;
  for (;;) {
    const q = buf.indexOf(QUOTE, from);
    if (q < 0) throw new SyntaxError('unterminated string in JSON');
    let k = q - 1;
    while (buf[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
    from = q + 1;
  }
}

function skipSpace(buf: Buffer, i: number): number {
  while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x0a || buf[i] === 0x0d || buf[i] === 0x09)) i++;
  return i;
}

/** The offset just past the JSON value that starts at `start` (after any white space). */
function valueEnd(buf: Buffer, start: number): number {
  const c = buf[start];
  if (c === QUOTE) return stringEnd(buf, start) + 1;
  if (c !== OPEN_BRACE && c !== OPEN_BRACKET) {
    let i = start;
    while (i < buf.length && buf[i] !== COMMA && buf[i] !== CLOSE_BRACE && buf[i] !== CLOSE_BRACKET && buf[i]! > 0x20) i++;
    return i;
  }
  let depth = 0;
  for (let i = start; i < buf.length; i++) {
    const b = buf[i];
    if (b === QUOTE) i = stringEnd(buf, i);
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++;
    else if ((b === CLOSE_BRACE || b === CLOSE_BRACKET) && --depth === 0) return i + 1;
  }
  throw new SyntaxError('unterminated object or array in JSON');
}

/** The raw bytes of each member of the JSON object in `buf`, by key, unparsed. */
export function objectMembers(buf: Buffer): Map<string, Buffer> {
  const members = new Map<string, Buffer>();
  let i = skipSpace(buf, 0);
  if (buf[i] !== OPEN_BRACE) throw new SyntaxError('not a JSON object');
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACE) return members;
  for (;;) {
    if (buf[i] !== QUOTE) throw new SyntaxError('expected a key in JSON object');
    const keyEnd = stringEnd(buf, i);
    const key = JSON.parse(buf.toString('utf8', i, keyEnd + 1)) as string;
    i = skipSpace(buf, keyEnd + 1);
    if (buf[i] !== COLON) throw new SyntaxError('expected ":" in JSON object');
    const start = skipSpace(buf, i + 1);
    const end = valueEnd(buf, start);
    members.set(key, buf.subarray(start, end));
    i = skipSpace(buf, end);
    if (buf[i] === CLOSE_BRACE) return members;
    if (buf[i] !== COMMA) throw new SyntaxError('expected "," or "}" in JSON object');
    i = skipSpace(buf, i + 1);
  }
}

/** JSON.parse of a member's bytes. */
export function parseBytes(buf: Buffer): unknown {
  return JSON.parse(buf.toString('utf8'));
}

/** What readList hands on of each element of items. */
export interface ListItems {
  /** An element's bytes, when the page is read as a stream. */
  bytes: (item: Buffer) => void;
  /**
   * An element already parsed, when the whole page is smaller than `wholeBelowBytes` and was parsed at
   * once (one native JSON.parse instead of a byte scan, twice as costly per small object under the
   * image's --lite-mode), with its share of the parse's wall time in ms (the page's, split evenly).
   * Without it every page is scanned.
   */
  parsed?: (item: object, parseMs: number) => void;
  wholeBelowBytes?: number;
  /**
   * The list's metadata, when the page was parsed whole, before its items are handed on: a reader of
   * pages can ask for the next one then, and the API server works on it while this one is decoded.
   * readList waits for what it returns before handing on the items (the next request goes out first).
   */
  head?: (metadata: { continue?: string; resourceVersion?: string }) => Promise<void> | void;
}

/**
 * Reads a Kubernetes list response ({kind, apiVersion, metadata, items: [...]}) from a byte stream,
 * holding no more than `wholeBelowBytes` of it or one element: a page that ends within that bound is
 * parsed whole and each element handed on parsed (`items.parsed`); past it, each element of items is
 * handed on as its own bytes, in order, as soon as it is complete (`items.bytes`). Returns the rest of
 * the list, parsed (its items empty). A list's only top-level array is its items, which is how they
 * are found.
 */
export async function readList(stream: AsyncIterable<Uint8Array>, items: ListItems | ((item: Buffer) => void)): Promise<Record<string, unknown>> {
  const o: ListItems = typeof items === 'function' ? { bytes: items } : items;
  const bound = o.parsed ? (o.wholeBelowBytes ?? 0) : 0;
  const held: Buffer[] = [];
  let heldBytes = 0;
  let scanner: ListScanner | undefined;
  for await (const raw of stream) {
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    if (scanner) {
      scanner.feed(chunk);
      continue;
    }
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes >= bound) {
      scanner = new ListScanner(o.bytes);
      for (const c of held.splice(0)) scanner.feed(c);
    }
  }
  if (scanner) return scanner.end();
  const started = performance.now();
  const list = JSON.parse(Buffer.concat(held).toString('utf8')) as Record<string, unknown> & { items?: unknown[] | null };
  const elements = (list.items ?? []).filter((item): item is object => typeof item === 'object' && item !== null);
  const perItemMs = elements.length ? (performance.now() - started) / elements.length : 0;
  const metadata = (list.metadata ?? {}) as { continue?: string; resourceVersion?: string };
  await o.head?.(metadata);
  for (const item of elements) o.parsed!(item, perItemMs);
  return { ...list, items: [] };
}

/** Finds the elements of a list's items in its bytes, chunk by chunk (readList). */
class ListScanner {
  readonly #onItem: (item: Buffer) => void;
  readonly #rest: Buffer[] = [];
  /** Pieces of the item being read, from earlier chunks. */
  #pending: Buffer[] = [];
  #depth = 0;
  #inString = false;
  #escaped = false;
  #inItems = false;

  constructor(onItem: (item: Buffer) => void) {
    this.#onItem = onItem;
  }

  feed(chunk: Buffer): void {
    /** Where the part of this chunk that belongs to the open item or to the rest (outside items) begins. */
    let mark = 0;
    let i = 0;
    while (i < chunk.length) {
      if (this.#inString) {
        if (this.#escaped) {
          this.#escaped = false;
          i++;
          continue;
        }
        const q = chunk.indexOf(QUOTE, i);
        const stop = q < 0 ? chunk.length : q;
        let k = stop - 1;
        while (k >= i && chunk[k] === BACKSLASH) k--;
        const oddRun = (stop - 1 - k) % 2 === 1;
        if (q < 0) {
          this.#escaped = oddRun;
          i = chunk.length;
        } else if (oddRun) {
          i = q + 1;
        } else {
          this.#inString = false;
          i = q + 1;
        }
        continue;
      }
      const b = chunk[i]!;
      if (b === QUOTE) this.#inString = true;
      else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        this.#depth++;
        if (this.#depth === 2 && b === OPEN_BRACKET) {
          // Entering items: the rest keeps an empty array in its place.
          this.#inItems = true;
          this.#rest.push(chunk.subarray(mark, i + 1));
        } else if (this.#depth === 3 && this.#inItems) {
          mark = i;
          this.#pending = [];
        }
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        this.#depth--;
        if (this.#inItems && this.#depth === 2) {
          this.#pending.push(chunk.subarray(mark, i + 1));
          this.#onItem(this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending));
          this.#pending = [];
        } else if (this.#inItems && this.#depth === 1) {
          this.#inItems = false;
          mark = i;
        }
      }
      i++;
    }
    if (this.#inItems && this.#depth >= 3) this.#pending.push(chunk.subarray(mark));
    else if (!this.#inItems) this.#rest.push(chunk.subarray(mark));
  }

  end(): Record<string, unknown> {
    if (this.#depth !== 0 || this.#inString) throw new SyntaxError('the list ended before its JSON did');
    return JSON.parse(Buffer.concat(this.#rest).toString('utf8')) as Record<string, unknown>;
  }
}

/** Splits a byte stream into its lines, as bytes; `onBytes` runs for every chunk, so a slow large object still counts as traffic. */
export async function* byteLines(stream: AsyncIterable<Uint8Array>, onBytes: () => void): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  for await (const raw of stream) {
    onBytes();
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf(0x0a, start)) >= 0) {
      pending.push(chunk.subarray(start, nl));
      const line = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
      pending = [];
      start = nl + 1;
      if (skipSpace(line, 0) < line.length) yield line;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  const last = Buffer.concat(pending);
  if (skipSpace(last, 0) < last.length) yield last;
}
