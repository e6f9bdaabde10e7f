// Scratch directories for tests: made under the system's temp directory and
// removed when the test process exits, so a run leaves nothing in /tmp.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.once('exit', () => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });

/** A new empty directory named `prefix` plus a random suffix, removed at the process's exit. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
